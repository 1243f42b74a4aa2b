"""An MLP whose hidden activation is applied in place on a tensor that the next layer already saved
for backward (a common "save memory" edit): `h = self.fc1(x); out = self.fc2(h); h.sigmoid_()`.
PyTorch then fails in backward with its in-place error.

usage: inplace_activation.py [--act sigmoid_|relu_|tanh_] [--out-of-place]"""
import argparse

import torch
import torch.nn as nn


class GatedMLP(nn.Module):
    def __init__(self, act, out_of_place):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)
        self.gate = nn.Linear(32, 8)
        self.act = act
        self.out_of_place = out_of_place

    def forward(self, x):
        h = self.fc1(x)
        out = self.fc2(h)
        if self.out_of_place:
            g = getattr(torch, self.act.rstrip("_"))(h)
        elif self.act == "relu_":
            g = torch.relu_(h)
        else:
            g = getattr(h, self.act)()
        return out * self.gate(g)


class Net(nn.Module):
    def __init__(self, act, out_of_place):
        super().__init__()
        self.block = GatedMLP(act, out_of_place)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.block(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--act", default="sigmoid_")
    ap.add_argument("--out-of-place", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    net = Net(a.act, a.out_of_place)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for step in range(2):
        x = torch.randn(4, 16)
        loss = net(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step %d loss %.4f" % (step, loss.item()))


if __name__ == "__main__":
    main()
