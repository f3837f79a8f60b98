# The aten ops a Llama decoder layer dispatches, forward and backward, in
# eager mode: the reference for the kernel lists of sim/core/kernel.c
# (tests/check_kernel.c, test_kernels_match_dispatch).
#
# Usage: python dispatch_ops.py hf > tests/data/hf-llama-dispatch.txt
#        python dispatch_ops.py torchtitan > tests/data/torchtitan-llama-dispatch.txt
#        python dispatch_ops.py fms > tests/data/fms-llama-dispatch.txt
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
# fms: one LLaMABlock of IBM's Foundation Model Stack at a53f804 (February
# 2024, the FMS fms-fsdp's benchmark rows trained), written out from
# fms/models/llama.py, fms/modules/attention.py (MultiHeadAttention),
# positions.py (RotaryEmbedding.adjusted_qk), layernorm.py
# (LayerNormParameterized, high-precision pow) and feedforward.py
# (GatedLinearUnit): separate query/key/value Linears, q and k
# transposed to (B, h, T, d) before the 2x2 rotations, position_ids made
# inside (position_ids=None, as fms-fsdp calls the model), SDPA
# (is_causal), the output's transpose(2, 1).contiguous(); same sizes as
# torchtitan's but 8 KV heads (the 7B and 13B rows are MHA).
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
    return logged_step(model, lambda: model(input_ids=ids, labels=ids,
                                            use_cache=False).loss)


def logged_step(module, forward, grad=None, leaf=None):
    """The ops of FORWARD() and of its backward (with GRAD), after one
    warm-up step whose gradients (MODULE's, LEAF's) are dropped, so the
    logged backward accumulates into nothing."""
    forward().backward(grad)
    module.zero_grad(set_to_none=True)
    if leaf is not None:
        leaf.grad = None
    fwd, bwd = OpLog(), OpLog()
    with fwd:
        out = forward()
    with bwd:
        out.backward(grad)
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


class FmsRotary:
    """RotaryEmbedding of fms/modules/positions.py at a53f804, no NTK."""

    def __init__(self, dim, ratio=10_000, max_seq_len=2048):
        freqs = 1.0 / (ratio ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        t = torch.arange(max_seq_len, dtype=freqs.dtype)
        freqs = torch.outer(t, freqs).float()
        self.cached = torch.stack([torch.cos(freqs), -torch.sin(freqs),
                                   torch.sin(freqs), torch.cos(freqs)],
                                  dim=2).view(*freqs.size(), 2, 2)

    def adjusted_qk(self, q, k):
        seq_len = max(k.size(2), q.size(2))
        position_ids = torch.arange(0, seq_len, dtype=torch.long).repeat(k.size(0), 1)
        q_ = q.float().reshape(*q.size()[:-1], -1, 2)
        k_ = k.float().reshape(*k.size()[:-1], -1, 2)
        max_start_pos = torch.max(position_ids[:, 0])
        _ = max_start_pos + seq_len     # compute_freqs_cis's argument
        freqs = self.cached[position_ids].unsqueeze(1)
        freqs = freqs.float()
        q_out = freqs[:, :, -q.size(2):, :, :, :].mul(q_.unsqueeze(-2)).sum(5).flatten(3)
        k_out = freqs[:, :, -k.size(2):, :, :, :].mul(k_.unsqueeze(-2)).sum(5).flatten(3)
        return q_out.type_as(q).contiguous(), k_out.type_as(k).contiguous()


class FmsNorm(RMSNorm):
    """LayerNormParameterized(elementwise_shift=False, use_mean=False,
    use_high_precision_pow=True), as LLaMABlock builds it: torchtitan's
    ops, the weight the product's first operand."""

    def forward(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.type_as(x)


class FmsBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)
        self.query, self.key, self.value = lin(D, D), lin(D, D), lin(D, D)
        self.dense = lin(D, D)
        self.wg, self.w1, self.w2 = lin(D, FF), lin(D, FF), lin(FF, D)
        self.ln, self.ff_ln = FmsNorm(D), FmsNorm(D)
        self.rotary = FmsRotary(HD)

    def attn(self, x):
        bs, q_len, _ = x.size()
        queries = self.query(x).view(bs, q_len, H, HD).transpose(2, 1)
        keys = self.key(x).view(bs, q_len, H, HD).transpose(2, 1)
        values = self.value(x).view(bs, q_len, H, HD).transpose(2, 1)
        queries, keys = self.rotary.adjusted_qk(queries, keys)
        out = torch.nn.functional.scaled_dot_product_attention(
            queries, keys, values, is_causal=True)
        out = out.transpose(2, 1).contiguous().view(bs, q_len, H * HD)
        return self.dense(out)

    def forward(self, x):
        residual = x
        x = self.attn(self.ln(x))
        x = x + residual
        residual = x
        x = self.ff_ln(x)
        x = self.w2(torch.nn.functional.silu(self.wg(x)) * self.w1(x))
        return x + residual


def block_ops(block, *args):
    x = torch.randn(B, S, D, dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn(B, S, D, dtype=torch.bfloat16)
    return logged_step(block, lambda: block(x, *args), grad, x)


def fms_ops():
    torch.manual_seed(0)
    return block_ops(FmsBlock().to(torch.bfloat16).train())


def torchtitan_ops():
    torch.manual_seed(0)
    block = TransformerBlock().to(torch.bfloat16).train()
    return block_ops(block, precompute_freqs_cis(HD, S))


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "hf"
    title = {"hf": "Hugging Face LlamaDecoderLayer",
             "torchtitan": "torchtitan (9dec370) TransformerBlock",
             "fms": "FMS (a53f804) LLaMABlock"}[which]
    print("# aten ops one %s dispatches (views left out)," % title)
    print("# made by tests/oracle-tools/dispatch_ops.py %s with torch %s, transformers %s,"
          % (which, torch.__version__, transformers.__version__))
    if which == "hf":
        print("# on CPU: the 2-layer model's ops minus the 1-layer model's.")
        one, two = ops_of(1), ops_of(2)
    else:
        print("# on CPU: one block's forward and backward.")
        one = (collections.Counter(), collections.Counter())
        two = torchtitan_ops() if which == "torchtitan" else fms_ops()
    print("# phase op count")
    for phase, a, b in (("fwd", one[0], two[0]), ("bwd", one[1], two[1])):
        for op in sorted(set(a) | set(b)):
            if b[op] != a[op]:
                print(phase, op, b[op] - a[op])


if __name__ == "__main__":
    main()
