# Which tensors a torchtitan (9dec370) Llama block saves for backward under
# selective op-level checkpointing when the block is torch.compile'd (the
# order torchtitan applies them: checkpoint wrapper, then compile), on CPU.
# Usage: python sac_saved.py > tests/data/oracle/sac-compiled-saved.txt
import torch, torch.nn as nn, torch.nn.functional as F
from collections import defaultdict
from torch.utils.checkpoint import checkpoint, CheckpointPolicy, create_selective_checkpoint_contexts
torch.manual_seed(0)
D, H, KV, FF, S, B = 256, 8, 2, 896, 64, 2
hd = D // H
def precompute_freqs_cis(dim, end, theta=500000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    return torch.polar(torch.ones_like(torch.outer(t, freqs)), torch.outer(t, freqs))
def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    fc = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    return torch.view_as_real(xq_ * fc).flatten(3).type_as(xq), torch.view_as_real(xk_ * fc).flatten(3).type_as(xk)
class RMSNorm(nn.Module):
    def __init__(s, d): super().__init__(); s.weight = nn.Parameter(torch.ones(d)); s.eps = 1e-5
    def forward(s, x):
        o = x.float(); o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + s.eps)
        return o.type_as(x) * s.weight
class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.wq = nn.Linear(D, H*hd, bias=False); s.wk = nn.Linear(D, KV*hd, bias=False)
        s.wv = nn.Linear(D, KV*hd, bias=False); s.wo = nn.Linear(H*hd, D, bias=False)
        s.w1 = nn.Linear(D, FF, bias=False); s.w2 = nn.Linear(FF, D, bias=False); s.w3 = nn.Linear(D, FF, bias=False)
        s.an = RMSNorm(D); s.fn = RMSNorm(D)
    def attn(s, x, fc):
        b, sl, _ = x.shape
        q, k, v = s.wq(x).view(b, sl, -1, hd), s.wk(x).view(b, sl, -1, hd), s.wv(x).view(b, sl, -1, hd)
        q, k = apply_rotary_emb(q, k, fc)
        k = k[:, :, :, None, :].expand(b, sl, KV, H // KV, hd).reshape(b, sl, H, hd)
        v = v[:, :, :, None, :].expand(b, sl, KV, H // KV, hd).reshape(b, sl, H, hd)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return s.wo(o.transpose(1, 2).contiguous().view(b, sl, -1))
    def forward(s, x, fc):
        h = x + s.attn(s.an(x), fc)
        return h + s.w2(F.silu(s.w1(s.fn(h))) * s.w3(s.fn(h)))
_save_list = {torch.ops.aten.mm.default, torch.ops.aten._scaled_dot_product_efficient_attention.default,
              torch.ops.aten._scaled_dot_product_flash_attention.default,
              torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,  # CPU stand-in for the CUDA flash op
              torch.ops.aten.abs.default, torch.ops.aten.max.default}
def ctx_fn():
    meta = defaultdict(int)
    def pol(ctx, func, *a, **k):
        key = ("recompute" if ctx.is_recompute else "forward") + "_mm_count"
        if func == torch.ops.aten.mm.default: meta[key] += 1
        save = func in _save_list and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE
    return create_selective_checkpoint_contexts(pol)
class Wrapped(nn.Module):
    def __init__(s): super().__init__(); s.b = Block()
    def forward(s, x, fc): return checkpoint(s.b, x, fc, use_reentrant=False, context_fn=ctx_fn, preserve_rng_state=False)
m = Wrapped().to(torch.bfloat16)
params = {p.untyped_storage().data_ptr() for p in m.parameters()}
fc = precompute_freqs_cis(hd, S)
x = torch.randn(B, S, D, dtype=torch.bfloat16, requires_grad=True)
m = torch.compile(m, fullgraph=True)
m(x, fc).sum().backward()  # compile once
saved = []
def pack(t):
    saved.append((tuple(t.shape), t.dtype, t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()))
    return t
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    y = m(x, fc)
byst = {}
for sh, dt, p, nb in saved:
    if p not in params:   # weights are FSDP's, not activations
        byst[p] = (nb, sh, dt)
print(f"# torch {torch.__version__}; block D={D} heads={H} kv_heads={KV} ffn={FF}, "
      f"batch {B} x seq {S} = T {B*S} tokens, bf16")
print("# saved activations of the compiled block (bytes, shape, dtype); freqs_cis is the block's input")
for p, (nb, sh, dt) in sorted(byst.items(), key=lambda kv: -kv[1][0]):
    print(f"{nb:8d}  {list(sh)} {str(dt).replace('torch.', '')}")
print("# total", sum(v[0] for v in byst.values()), "bytes")
