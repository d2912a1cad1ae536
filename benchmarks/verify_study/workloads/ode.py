"""A neural ODE fitted to a spiral with a hand-written RK4 integrator (the study's ODE kind):
the gradient flows through every solver step; the fitted trajectory goes to a text file."""

import torch
from torch import nn

torch.manual_seed(0)
t = torch.linspace(0, 6, 60)
true = torch.stack([torch.exp(-0.1 * t) * torch.cos(t), torch.exp(-0.1 * t) * torch.sin(t)], dim=1)
field = nn.Sequential(nn.Linear(2, 50), nn.Tanh(), nn.Linear(50, 2))
opt = torch.optim.Adam(field.parameters(), lr=1e-2)


def integrate(y0, times):
    ys, y = [y0], y0
    for a, b in zip(times[:-1], times[1:]):
        h = b - a
        k1 = field(y)
        k2 = field(y + h * k1 / 2)
        k3 = field(y + h * k2 / 2)
        k4 = field(y + h * k3)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
        ys.append(y)
    return torch.stack(ys)


for it in range(300):
    opt.zero_grad()
    loss = (integrate(true[0], t) - true).abs().mean()
    loss.backward()
    opt.step()
    if it % 10 == 0:
        with open("ode_fit.txt", "w") as handle:
            handle.write("\n".join(f"{x:.4f} {y:.4f}" for x, y in integrate(true[0], t).tolist()))
