"""A tiny character GPT with gradient accumulation (the study's GPT kind): 4 micro-batches per
step, clipping after unscale-free backward, AdamW with a warm-up/cosine schedule stepped after the
optimizer, metrics in a sqlite database (as an experiment tracker keeps them), a checkpoint each
step."""

import math
import os
import sqlite3

import torch
from torch import nn

torch.manual_seed(0)
text = "the quick brown fox jumps over the lazy dog. " * 200
chars = sorted(set(text))
data = torch.tensor([chars.index(c) for c in text])
block, vocab, width = 32, len(chars), 64


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Parameter(torch.zeros(block, width))
        layer = nn.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(width, vocab)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.head(self.blocks(self.embed(x) + self.position[: x.shape[1]], mask=mask, is_causal=True))


model = GPT()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
total, warmup, accumulate = 100, 10, 4
sched = torch.optim.lr_scheduler.LambdaLR(
    opt, lambda s: (s + 1) / warmup if s < warmup else 0.5 * (1 + math.cos(math.pi * (s - warmup) / (total - warmup))))
os.makedirs("out", exist_ok=True)
db = sqlite3.connect("out/metrics.db")
db.execute("create table if not exists metrics (step integer, loss real)")
for step in range(total):
    for micro in range(accumulate):
        starts = torch.randint(0, len(data) - block - 1, (8,))
        x = torch.stack([data[s:s + block] for s in starts])
        y = torch.stack([data[s + 1:s + block + 1] for s in starts])
        loss = nn.functional.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1)) / accumulate
        loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    sched.step()
    db.execute("insert into metrics values (?, ?)", (step, loss.item() * accumulate))
    db.commit()
    torch.save({"model": model.state_dict(), "step": step}, "out/ckpt.pt")
