"""A training loop whose optimizer writes NaN into a weight (a learning rate that became NaN): the
step after it, the first forward op reading the weight makes NaN. The recorder keeps out of the
optimizer's ops (its dispatch mode is off between backward and the next module call) and must
still name the weight and that it changed between backward and forward.
With --data-nan, the batch of the third step is made NaN outside any module (unrecorded code)."""
import sys

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x = torch.randn(4, 8)
    if "--data-nan" in sys.argv and step == 2:
        x = x.log()  # log of negative numbers, with grad mode on, between backward and forward
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    if step == 1 and "--data-nan" not in sys.argv:
        opt.param_groups[0]["lr"] = float("nan")
    opt.step()
