# The aten ops a Llama decoder layer dispatches, forward and backward, in
# eager mode: the reference for the kernel lists of sim/core/kernel.c
# (tests/check_kernel.c, test_kernels_match_dispatch).
#
# Usage: python dispatch_ops.py hf > tests/data/hf-llama-dispatch.txt
#        python dispatch_ops.py torchtitan > tests/data/torchtitan-llama-dispatch.txt
#
# hf: Hugging Face's LlamaForCausalLM.
# The model is tests/data/export-llama-config.json's (hidden 256, ffn 688,
# 4 heads, vocab 1000), bf16, attn_implementation "sdpa", 2 x 64 tokens,
# use_cache=False (transformers 5's DynamicCache otherwise copies k and v
# into an empty cache each layer, a cat that older releases did not run).
# A TorchDispatchMode logs every op whose schema does not return an alias
# (views launch nothing); a layer's ops are the 2-layer model's minus the
# 1-layer model's, so embedding, final norm, head and loss cancel out.
#
# torchtitan: one TransformerBlock of torchtitan's Llama as its
# models/llama/model.py has it at 9dec370 (the benchmark commit of
# doc/accuracy.md's torchtitan rows), written out here: RMSNorm on
# x.float(), wq/wk/wv, apply_rotary_emb's view_as_complex product,
# repeat_kv's expand and reshape, SDPA (is_causal), the output's
# transpose(1, 2).contiguous(), wo, the residual adds, and
# w2(silu(w1(x)) * w3(x)); dim 256, 8 heads, 2 KV heads, ffn 896,
# bf16, 2 x 64 tokens, its input requiring grad as a block's does.
#
# It runs on CPU: the ops are those CUDA runs, while the SDPA op is the
# CPU flash one (on CUDA _scaled_dot_product_flash_attention and its
# backward) and slice_backward is one op where CUDA launches two kernels
# (a zero fill and a copy).
import collections, sys
import torch
import transformers
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import LlamaConfig, LlamaForCausalLM


def returns_alias(func):
    rets = func._schema.returns
    return not rets or (rets[0].alias_info is not None
                        and not rets[0].alias_info.is_write)


class OpLog(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not returns_alias(func):
            self.ops[func.overloadpacket.__name__ + "." + func._overloadname] += 1
        return func(*args, **(kwargs or {}))


def ops_of(layers):
    cfg = LlamaConfig(hidden_size=256, intermediate_size=688,
                      num_attention_heads=4, num_key_value_heads=4,
                      vocab_size=1000, num_hidden_layers=layers,
                      max_position_embeddings=2048, tie_word_embeddings=False,
                      attn_implementation="sdpa")
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16).train()
    ids = torch.randint(0, 1000, (2, 64))
    model(input_ids=ids, labels=ids, use_cache=False).loss.backward()
    model.zero_grad(set_to_none=True)
    fwd, bwd = OpLog(), OpLog()
    with fwd:
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
    with bwd:
        loss.backward()
    return fwd.ops, bwd.ops


D, H, KV, FF, S, B = 256, 8, 2, 896, 64, 2
HD = D // H


def precompute_freqs_cis(dim, end, theta=500000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    fc = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * fc).flatten(3)
    xk_out = torch.view_as_real(xk_ * fc).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    return (x[:, :, :, None, :]
            .expand(bs, slen, n_kv_heads, n_rep, head_dim)
            .reshape(bs, slen, n_kv_heads * n_rep, head_dim))


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        out = x.float()
        out = out * torch.rsqrt(out.pow(2).mean(-1, keepdim=True) + self.eps)
        return out.type_as(x) * self.weight


class TransformerBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)
        self.wq, self.wk, self.wv = lin(D, H * HD), lin(D, KV * HD), lin(D, KV * HD)
        self.wo = lin(H * HD, D)
        self.w1, self.w2, self.w3 = lin(D, FF), lin(FF, D), lin(D, FF)
        self.attention_norm, self.ffn_norm = RMSNorm(D), RMSNorm(D)

    def attention(self, x, freqs_cis):
        bs, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bs, seqlen, -1, HD)
        xk = xk.view(bs, seqlen, -1, HD)
        xv = xv.view(bs, seqlen, -1, HD)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        keys, values = repeat_kv(xk, H // KV), repeat_kv(xv, H // KV)
        out = torch.nn.functional.scaled_dot_product_attention(
            xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2),
            is_causal=True)
        out = out.transpose(1, 2).contiguous().view(bs, seqlen, -1)
        return self.wo(out)

    def feed_forward(self, x):
        return self.w2(torch.nn.functional.silu(self.w1(x)) * self.w3(x))

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


def torchtitan_ops():
    torch.manual_seed(0)
    block = TransformerBlock().to(torch.bfloat16).train()
    fc = precompute_freqs_cis(HD, S)
    x = torch.randn(B, S, D, dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn(B, S, D, dtype=torch.bfloat16)
    block(x, fc).backward(grad)
    block.zero_grad(set_to_none=True)
    x.grad = None
    fwd, bwd = OpLog(), OpLog()
    with fwd:
        out = block(x, fc)
    with bwd:
        out.backward(grad)
    return fwd.ops, bwd.ops


which = sys.argv[1] if len(sys.argv) > 1 else "hf"
print("# aten ops one %s dispatches (views left out)," %
      ("Hugging Face LlamaDecoderLayer" if which == "hf"
       else "torchtitan (9dec370) TransformerBlock"))
print("# made by tests/oracle-tools/dispatch_ops.py %s with torch %s, transformers %s,"
      % (which, torch.__version__, transformers.__version__))
if which == "hf":
    print("# on CPU: the 2-layer model's ops minus the 1-layer model's.")
    one, two = ops_of(1), ops_of(2)
else:
    print("# on CPU: one block's forward and backward.")
    one, two = (collections.Counter(), collections.Counter()), torchtitan_ops()
print("# phase op count")
for phase, a, b in (("fwd", one[0], two[0]), ("bwd", one[1], two[1])):
    for op in sorted(set(a) | set(b)):
        if b[op] != a[op]:
            print(phase, op, b[op] - a[op])
