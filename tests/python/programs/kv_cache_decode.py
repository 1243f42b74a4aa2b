"""A LLaMA-style decoder trained through its own decoding loop, the way Meta's model.py writes its
attention: a preallocated key/value cache written in place at each position
(`self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk`) and read back as a view that the attention's
matmul saves for backward. The next decoding step writes the cache again, so backward fails with
PyTorch's in-place error (with one sequence in the batch, as in a chat: the saved keys are then a view
of the cache; with more, matmul's reshape copies them). With --clone the cache is cloned before each
write (the fix): no error.

usage: kv_cache_decode.py [--steps N] [--batch B] [--clone] [--seed S]"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

DIM, HEADS, LAYERS, VOCAB, MAX_BATCH, MAX_SEQ = 32, 4, 2, 50, 2, 16


class Attention(nn.Module):
    def __init__(self, clone_cache):
        super().__init__()
        self.n_heads = HEADS
        self.head_dim = DIM // HEADS
        self.wq = nn.Linear(DIM, DIM, bias=False)
        self.wk = nn.Linear(DIM, DIM, bias=False)
        self.wv = nn.Linear(DIM, DIM, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.clone_cache = clone_cache
        self.cache_k = torch.zeros((MAX_BATCH, MAX_SEQ, self.n_heads, self.head_dim))
        self.cache_v = torch.zeros((MAX_BATCH, MAX_SEQ, self.n_heads, self.head_dim))

    def forward(self, x, start_pos, mask):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_heads, self.head_dim)

        if self.clone_cache:
            self.cache_k = self.cache_k.clone()
            self.cache_v = self.cache_v.clone()
        self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk
        self.cache_v[:bsz, start_pos : start_pos + seqlen] = xv

        keys = self.cache_k[:bsz, : start_pos + seqlen]
        values = self.cache_v[:bsz, : start_pos + seqlen]

        xq = xq.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(DIM, 4 * DIM, bias=False)
        self.w2 = nn.Linear(4 * DIM, DIM, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)))


class TransformerBlock(nn.Module):
    def __init__(self, clone_cache):
        super().__init__()
        self.attention = Attention(clone_cache)
        self.feed_forward = FeedForward()
        self.attention_norm = nn.LayerNorm(DIM)
        self.ffn_norm = nn.LayerNorm(DIM)

    def forward(self, x, start_pos, mask):
        h = x + self.attention(self.attention_norm(x), start_pos, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, clone_cache=False):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList(TransformerBlock(clone_cache) for _ in range(LAYERS))
        self.norm = nn.LayerNorm(DIM)
        self.output = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, tokens, start_pos):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, start_pos, None)
        return self.output(self.norm(h))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--clone", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    model = Transformer(clone_cache=a.clone)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    tokens = torch.randint(VOCAB, (a.batch, a.steps + 1))

    opt.zero_grad()
    losses = []
    for pos in range(a.steps):
        logits = model(tokens[:, pos : pos + 1], pos)
        losses.append(F.cross_entropy(logits.view(-1, VOCAB), tokens[:, pos + 1]))
    loss = torch.stack(losses).mean()
    loss.backward()
    opt.step()
    print("loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
