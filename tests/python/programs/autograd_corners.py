"""Corners of autograd a recorder must leave exactly as they are: inference-mode tensors used in
training, a sparse matmul, a custom autograd.Function that saves its output, a retained graph
backpropagated twice, a gradient penalty (autograd.grad with create_graph), activation
checkpointing, tensors views modified in place under no_grad, and a nested tensor. Prints every
gradient exactly (hex floats), so that two runs can be compared byte for byte."""
import torch
import torch.nn as nn
import torch.utils.checkpoint as cp


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * x
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * 2 * x + 0 * y


def show(name, t):
    print(name, [float(v).hex() for v in t.detach().reshape(-1).tolist()])


def main():
    torch.manual_seed(0)
    x = torch.randn(4, 3, requires_grad=True)

    with torch.inference_mode():
        scale = torch.randn(3) * 2
        shifted = scale[1:] + 1
    loss = (x * scale.clone()).sum() + shifted.sum()

    i = torch.tensor([[0, 1, 1], [2, 0, 2]])
    sp = torch.sparse_coo_tensor(i, torch.tensor([3.0, 4.0, 5.0]), (2, 4))
    loss = loss + torch.sparse.mm(sp, x).sum()

    loss = loss + Square.apply(x).sum()

    lin = nn.Linear(3, 3)
    h = cp.checkpoint(lambda t: torch.tanh(lin(t)), x, use_reentrant=True)
    loss = loss + h.sum()

    buf = torch.zeros(4, 3)
    with torch.no_grad():
        buf[1:].add_(1.0)
    loss = loss + (x * buf).sum()

    nt = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(1, 3)])
    print("nested", nt.size(0))

    loss.backward(retain_graph=True)
    show("x.grad once", x.grad)
    loss.backward()
    show("x.grad twice", x.grad)
    show("lin.weight.grad", lin.weight.grad)

    w = torch.randn(3, requires_grad=True)
    y = (x.detach() * w).pow(2).sum()
    (g,) = torch.autograd.grad(y, w, create_graph=True)
    penalty = g.pow(2).sum()
    penalty.backward()
    show("w.grad", w.grad)


if __name__ == "__main__":
    main()
