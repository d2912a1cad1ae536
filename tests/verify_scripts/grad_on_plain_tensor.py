"""Gradients assigned by hand to a plain leaf tensor (no nn.Module): `w.grad = d` is a gradient
write, like one to a module's parameter.  Correct.

verify-expect: exit 0; nothing
"""

import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.01)
for _ in range(8):
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    opt.zero_grad()
    with torch.no_grad():
        d = 2 * x.t() @ (x @ w - y) / len(x)  # the gradient of the mean squared error, by hand
    w.grad = d
    opt.step()
