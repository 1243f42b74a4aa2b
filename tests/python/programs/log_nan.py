"""A regression model whose loss takes the log of a prediction that can be negative: NaN first
appears at aten::log in the forward pass (the program itself does not notice; its loss prints nan).

usage: log_nan.py [--steps N] [--clamp]"""
import argparse

import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.body(x).squeeze(-1)


def log_likelihood(pred, clamp):
    if clamp:
        pred = pred.clamp_min(1e-6)
    return torch.log(pred)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--clamp", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = Scorer()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(a.steps):
        x = torch.randn(32, 8)
        pred = model(x)
        loss = -log_likelihood(pred, a.clamp).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step %d loss %s" % (step, loss.item()))


if __name__ == "__main__":
    main()
