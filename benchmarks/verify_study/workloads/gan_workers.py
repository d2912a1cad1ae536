"""A small GAN fed by a DataLoader with two worker processes (the study's GAN kind): the critic
and generator steps alternate, a tracker process writes its run folder, samples are saved."""

import os
import subprocess
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    real = torch.randn(2048, 16) * 0.5 + 1.0
    loader = DataLoader(TensorDataset(real), batch_size=64, shuffle=True, num_workers=2)
    gen = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
    disc = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    tracker = ("import os, time\nos.makedirs('wandb/run-local/files', exist_ok=True)\n"
               "open('wandb/run-local/files/config.yaml', 'w').write('lr: 0.0002\\n')\n")
    subprocess.Popen([sys.executable, "-c", tracker]).wait()
    os.makedirs("samples", exist_ok=True)
    for epoch in range(20):
        for i, (batch,) in enumerate(loader):
            noise = torch.randn(batch.shape[0], 8)
            fake = gen(noise)
            opt_d.zero_grad()
            loss_d = bce(disc(batch), torch.ones(batch.shape[0], 1)) + bce(disc(fake.detach()),
                                                                            torch.zeros(batch.shape[0], 1))
            loss_d.backward()
            opt_d.step()
            opt_g.zero_grad()
            bce(disc(fake), torch.ones(batch.shape[0], 1)).backward()
            opt_g.step()
        torch.save(gen(torch.randn(16, 8)).detach(), f"samples/epoch_{epoch}.pt")


if __name__ == "__main__":
    main()
