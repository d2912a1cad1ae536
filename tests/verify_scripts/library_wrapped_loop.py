"""A loop that does backward and step through an installed library's wrapper and never clears.
The checker cannot see through the library, the run can: runtime-only GL001, on the user's
line (with its column), never on the library's file.

verify-expect: exit 1; GL001 line 21 runtime only
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "verify_lib", "site-packages"))

import torch
from steplib import Trainer

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
trainer = Trainer(torch.optim.SGD(model.parameters(), lr=0.01))
for _ in range(10):
    loss = torch.nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1))
    trainer.backward(loss)
    trainer.step()
