"""Toy nn.Modules for tests/export-model.test: class and attribute names of
the user's own, a forward order that differs from registration order, a
class named like an fsdpsim layer (Attention), a bare nn.Parameter, a tied
head, a dropout run twice and one with p = 0."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    """Causal self-attention through SDPA; out is registered before qkv."""

    def __init__(self, dim, heads):
        super().__init__()
        self.num_heads = heads
        self.out = nn.Linear(dim, dim)
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        b, s, d = x.shape
        qkv = self.qkv(x).view(b, s, 3, self.num_heads, d // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, s, d))


class GatedMLP(nn.Module):
    """SwiGLU: w2(silu(w1(x)) * w3(x))."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.w2(self.act(self.w1(x)) * self.w3(x))


class ToyBlock(nn.Module):
    def __init__(self, dim, heads, hidden, dropout):
        super().__init__()
        self.attn = Attention(dim, heads)
        self.mlp = GatedMLP(dim, hidden)
        self.norm1 = nn.LayerNorm(dim, bias=False)
        self.norm2 = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.drop(self.attn(self.norm1(x)))
        return x + self.drop(self.mlp(self.norm2(x)))


class ToyNet(nn.Module):
    """Parameters: embed 97*32 + pos 64*32 + 3 blocks * (attention
    32*32+32 + 32*96+96, MLP 3*32*80, norms 32 + 2*32) + norm 2*32, head
    tied = 3104 + 2048 + 3*12000 + 64 = 41216."""

    def __init__(self, vocab=97, dim=32, heads=4, hidden=80, layers=3,
                 dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(1, 64, dim))
        self.blocks = nn.ModuleList(ToyBlock(dim, heads, hidden, dropout)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight
        self.unused = nn.Dropout(0.0)

    def forward(self, ids):
        x = self.embed(ids) + self.pos[:, :ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class DataDependentNet(ToyNet):
    """Reads a value in forward(), which meta tensors do not have: the
    export falls back to registration order."""

    def forward(self, ids):
        if ids.max().item() < 0:
            raise ValueError("negative token")
        return super().forward(ids)
