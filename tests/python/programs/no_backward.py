"""Evaluation only: a forward pass with gradients on, printed, and no backward. Exits with status 3."""
import sys

import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
out = model(torch.randn(3, 4))
print("out", tuple(out.shape))
sys.exit(3)
