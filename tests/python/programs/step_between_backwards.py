"""A step between two backward calls over one graph (retain_graph=True), as GAN loops do by mistake:
the optimizer's no-grad update of a weight that the graph saved breaks the second backward.
With --no-step, only the optimizer's own state is touched between them, and both backward calls run."""
import sys

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
opt = torch.optim.AdamW(model.parameters(), lr=0.1)
x = torch.randn(4, 8)
loss = model(x).pow(2).mean()
loss.backward(retain_graph=True)
if "--no-step" not in sys.argv:
    opt.step()
loss.backward()
