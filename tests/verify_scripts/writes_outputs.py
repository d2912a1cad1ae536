"""A correct loop that writes the way real scripts do: makes an output folder, saves a
checkpoint every step (torch.save), appends to an existing log (train.log, made by the
test), writes its config, reads it back and copies it (shutil.copy), keeps only the last
two checkpoints (os.remove), and saves its final model in a finally: (the budget stop runs
it).  Expected: exit 0, 5 steps; every write lands in verify's copy-on-write overlay, the
folder it runs in is byte-for-byte unchanged, and the report lists the files it wrote with
their sizes."""

import json
import os
import shutil

import torch
from torch import nn

torch.manual_seed(0)
os.makedirs("outputs/checkpoints", exist_ok=True)
with open("outputs/config.json", "w") as handle:
    json.dump({"lr": 0.1, "steps": 100}, handle)
with open("outputs/config.json") as handle:  # read back what it wrote
    config = json.load(handle)
shutil.copy("outputs/config.json", "outputs/config.backup.json")
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
try:
    for step in range(config["steps"]):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1))
        loss.backward()
        opt.step()
        torch.save({"step": step, "model": model.state_dict()}, f"outputs/checkpoints/step_{step}.pt")
        assert torch.load(f"outputs/checkpoints/step_{step}.pt")["step"] == step
        kept = sorted(os.listdir("outputs/checkpoints"), key=lambda name: int(name[5:-3]))
        for old in kept[:-2]:
            os.remove(os.path.join("outputs/checkpoints", old))
        with open("train.log", "a") as log:
            log.write(f"step {step} loss {loss.item():.4f}\n")
finally:
    torch.save(model.state_dict(), "final.pt")
    with open("train.log") as log:
        print("log lines:", len(log.read().splitlines()))
