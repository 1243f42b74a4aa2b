"""A model that "normalizes" a hidden activation through .data after the next layer saved it: the
write goes around autograd, so the version counter does not move, PyTorch raises nothing, and the
gradients are silently wrong.

usage: data_mutation.py"""
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(12, 24)
        self.mix = nn.Linear(24, 6)

    def forward(self, x):
        h = self.proj(x)
        y = self.mix(h)
        h.data.div_(h.data.norm())
        return y


def main():
    torch.manual_seed(0)
    enc = Encoder()
    x = torch.randn(5, 12)
    loss = enc(x).square().sum()
    loss.backward()
    print("grad norm %.4f" % enc.mix.weight.grad.norm().item())


if __name__ == "__main__":
    main()
