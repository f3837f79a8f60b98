#!/usr/bin/env python3
"""Ground-truth oracle: run REAL PyTorch FSDP1 (FullyShardedDataParallel) on CPU
and record every collective it issues, per training step, plus the FSDP unit
structure.

Backends:
  --backend gloo : world_size processes via torch.multiprocessing, gloo over a FileStore
  --backend fake : ONE process, rank 0 of a FakeProcessGroup of world_size ranks
                   (torch.testing._internal.distributed.fake_pg); collectives are
                   no-ops but FSDP issues exactly the same calls.

Instrumentation (all monkeypatches, installed before FSDP construction):
  * torch.distributed.{all_gather, all_gather_single, all_gather_into_tensor,
    _all_gather_base, reduce_scatter_single, reduce_scatter_tensor,
    _reduce_scatter_base, reduce_scatter, all_reduce, broadcast, barrier,
    all_gather_object, broadcast_object_list}: every call is recorded with kind,
    element count, dtype, bytes, process-group size/ranks, the FSDP unit it is for
    and the FSDP call stack it came from.
  * FlatParamHandle._all_gather_flat_param (which handle is being all-gathered),
    _runtime_utils._reduce_grad / _reduce_grad_no_shard (which handle is reduced),
    and the hook functions _pre_forward, _post_forward, _pre_backward_hook,
    _post_backward_hook, _prefetch_handle, _unshard, _reshard,
    _post_backward_final_callback, _root_pre_forward (recorded as "hook" events).
  * The training loop sets phase = forward / backward / optimizer, iter, micro.
  * Memory (type "mem" events): after every patched FSDP function returns (and
    on entry to _post_backward_hook, where autograd has just accumulated the
    unsharded gradient), and at the end of each phase, every handle's state is
    swept and each change is recorded:
      P  the unsharded parameters are allocated: _full_param_padded's
         storage().size() > 0 (sharded strategies; after _reshard with
         free=True it is 0), or, for NO_SHARD with a low-precision param
         dtype, _mp_shard's storage (the low-precision unsharded copy);
      G  an unsharded gradient is live: flat_param.grad of the unsharded size
         (sharded strategies), or for NO_SHARD a gradient not yet all-reduced;
      S  a sharded gradient is live: _saved_grad_shard, or flat_param.grad of
         the shard's size (sharded strategies), or for NO_SHARD an all-reduced
         flat_param.grad.
    Each event gives live (bool) and bytes (the storage's size in bytes).
"""
import argparse
import functools
import json
import os
import sys
import tempfile
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist

# ----------------------------------------------------------------------------
# models
# ----------------------------------------------------------------------------


class ToyModel(nn.Module):
    """fsdpsim's built-in 'toy': Linear(1024,2048), ReLU, Linear(2048,4096)."""

    def __init__(self, d_in=1024, d_mid=2048, d_out=4096):
        super().__init__()
        self.net1 = nn.Linear(d_in, d_mid)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(d_mid, d_out)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


class LlamaRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        v = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(v + self.eps))


class LlamaAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        # registration order as in HF modeling_llama.py
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, hidden, bias=False)
        self.v_proj = nn.Linear(hidden, hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(o.transpose(1, 2).reshape(b, s, h))


class LlamaMLP(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, ffn, bias=False)
        self.up_proj = nn.Linear(hidden, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, hidden, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        # HF registration order: self_attn, mlp, input_layernorm, post_attention_layernorm
        self.self_attn = LlamaAttention(hidden, heads)
        self.mlp = LlamaMLP(hidden, ffn)
        self.input_layernorm = LlamaRMSNorm(hidden)
        self.post_attention_layernorm = LlamaRMSNorm(hidden)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x


class LlamaModel(nn.Module):
    def __init__(self, vocab, hidden, layers, heads, ffn):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(hidden, heads, ffn) for _ in range(layers)]
        )
        self.norm = LlamaRMSNorm(hidden)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, vocab=1000, hidden=256, layers=4, heads=4, ffn=688):
        super().__init__()
        self.model = LlamaModel(vocab, hidden, layers, heads, ffn)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids, labels):
        logits = self.lm_head(self.model(ids))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), labels.view(-1))


# ----------------------------------------------------------------------------
# recording
# ----------------------------------------------------------------------------

REC = {"phase": "init", "iter": -1, "micro": -1, "events": []}
CTX = []  # stack of (what, unit) set by patched FSDP functions
HANDLE2UNIT = {}  # id(FlatParamHandle) -> unit index
STATE2UNIT = {}  # id(FSDP module) -> unit index
PG_LABEL = {}  # id(process group) -> "shard" | "replicate" (set after FSDP construction)
MEM_HANDLES = []  # (unit, handle) after FSDP construction
MEM_STATE = {}  # unit -> {"P": bytes, "G": bytes, "S": bytes} (0 = not live)
NOSHARD_PENDING = {}  # unit -> True from the post-backward hook until its all-reduce


def _storage_bytes(t):
    if t is None:
        return 0
    return int(t.untyped_storage().nbytes())


def _mem_state(u, h):
    fp = h.flat_param
    g = fp.grad
    if h.uses_sharded_strategy:
        p = _storage_bytes(getattr(fp, "_full_param_padded", None))
        shard = int(fp._sharded_size.numel())
        ug = g is not None and g.numel() != shard
        gb = int(g.numel() * g.element_size()) if ug else 0
        sb = 0
        saved = getattr(fp, "_saved_grad_shard", None)
        if saved is not None:
            sb = int(saved.numel() * saved.element_size())
        elif g is not None and not ug:
            sb = int(g.numel() * g.element_size())
    else:
        p = _storage_bytes(getattr(fp, "_mp_shard", None)) if h._uses_param_mixed_precision else 0
        b = int(g.numel() * g.element_size()) if g is not None else 0
        pend = NOSHARD_PENDING.get(u, False)
        gb, sb = (b, 0) if pend else (0, b)
    return {"P": p, "G": gb, "S": sb}


def _mem_sweep(where):
    if not MEM_HANDLES or REC["phase"] not in ("forward", "backward", "optimizer"):
        return
    for u, h in MEM_HANDLES:
        st = _mem_state(u, h)
        old = MEM_STATE.get(u, {"P": 0, "G": 0, "S": 0})
        for what in ("P", "G", "S"):
            if (st[what] > 0) != (old[what] > 0):
                REC["events"].append({
                    "type": "mem", "what": what, "unit": u, "live": st[what] > 0,
                    "bytes": st[what] if st[what] > 0 else old[what], "where": where,
                    "iter": REC["iter"], "micro": REC["micro"], "phase": REC["phase"],
                })
        MEM_STATE[u] = st


def _unit_of_handle(h):
    if h is None:
        return None
    return HANDLE2UNIT.get(id(h))


def _pg_info(group):
    try:
        g = group if group is not None else dist.group.WORLD
        size = dist.get_world_size(g)
        try:
            ranks = dist.get_process_group_ranks(g)
        except Exception:
            ranks = None
        return size, ranks
    except Exception as e:  # noqa
        return None, None


def _fsdp_stack():
    out = []
    for fr in traceback.extract_stack()[:-3]:
        if "/torch/distributed/fsdp/" in fr.filename or "/torch/distributed/algorithms/_checkpoint" in fr.filename or "/torch/utils/checkpoint" in fr.filename:
            out.append(os.path.basename(fr.filename) + ":" + fr.name)
    # dedupe consecutive
    ded = []
    for x in out:
        if not ded or ded[-1] != x:
            ded.append(x)
    return ded


def _record(kind, numel, dtype, group, extra=None):
    size, ranks = _pg_info(group)
    ev = {
        "type": "collective",
        "kind": kind,
        "iter": REC["iter"],
        "micro": REC["micro"],
        "phase": REC["phase"],
        "numel": int(numel),
        "dtype": str(dtype).replace("torch.", ""),
        "bytes": int(numel) * torch.empty((), dtype=dtype).element_size(),
        "pg_size": size,
        "pg_ranks": ranks,
        "pg": PG_LABEL.get(id(group if group is not None else dist.group.WORLD), "other"),
        "unit": None,
        "ctx": [c[0] for c in CTX],
        "fsdp_stack": _fsdp_stack(),
    }
    # the innermost context with a unit wins
    for what, u in reversed(CTX):
        if u is not None:
            ev["unit"] = u
            break
    if extra:
        ev.update(extra)
    REC["events"].append(ev)


def _hook_event(name, unit, extra=None):
    ev = {
        "type": "hook",
        "name": name,
        "unit": unit,
        "iter": REC["iter"],
        "micro": REC["micro"],
        "phase": REC["phase"],
    }
    if extra:
        ev.update(extra)
    REC["events"].append(ev)


def install_collective_patches():
    orig = {}

    def wrap(name, kind, numel_fn, group_fn):
        if not hasattr(dist, name):
            return
        f = getattr(dist, name)
        orig[name] = f

        @functools.wraps(f)
        def w(*args, **kwargs):
            try:
                numel, dtype = numel_fn(*args, **kwargs)
                _record(kind, numel, dtype, group_fn(*args, **kwargs), {"api": name})
            except Exception as e:  # never break the run
                REC["events"].append({"type": "record_error", "api": name, "err": repr(e)})
            return f(*args, **kwargs)

        setattr(dist, name, w)

    def g_kw(pos):
        def fn(*a, **k):
            if "group" in k:
                return k["group"]
            if len(a) > pos:
                return a[pos]
            return None

        return fn

    # all_gather(tensor_list, tensor, group=None, async_op=False): record the gathered total
    wrap("all_gather", "allgather",
         lambda tl, t, *a, **k: (sum(x.numel() for x in tl), t.dtype), g_kw(2))
    for n in ("all_gather_single", "all_gather_into_tensor", "_all_gather_base"):
        wrap(n, "allgather", lambda out, inp, *a, **k: (out.numel(), out.dtype), g_kw(2))
    # reduce-scatter: record the whole input (what NCCL counts as the buffer)
    for n in ("reduce_scatter_single", "reduce_scatter_tensor", "_reduce_scatter_base"):
        wrap(n, "reducescatter", lambda out, inp, *a, **k: (inp.numel(), inp.dtype), g_kw(3))
    wrap("reduce_scatter", "reducescatter",
         lambda out, il, *a, **k: (sum(x.numel() for x in il), out.dtype), g_kw(3))
    wrap("all_reduce", "allreduce", lambda t, *a, **k: (t.numel(), t.dtype), g_kw(2))
    wrap("broadcast", "broadcast", lambda t, *a, **k: (t.numel(), t.dtype),
         lambda *a, **k: k.get("group", a[2] if len(a) > 2 else None))
    wrap("barrier", "barrier", lambda *a, **k: (0, torch.uint8), lambda *a, **k: k.get("group", a[0] if a else None))
    wrap("all_gather_object", "allgather_object", lambda *a, **k: (0, torch.uint8), lambda *a, **k: k.get("group", a[2] if len(a) > 2 else None))
    wrap("broadcast_object_list", "broadcast_object", lambda *a, **k: (0, torch.uint8), lambda *a, **k: k.get("group", a[2] if len(a) > 2 else None))
    return orig


def install_fsdp_patches():
    from torch.distributed.fsdp import _flat_param as fpm
    from torch.distributed.fsdp import _runtime_utils as ru
    from torch.distributed.fsdp import fully_sharded_data_parallel as fsdpm

    # which handle is all-gathered
    orig_ag = fpm.FlatParamHandle._all_gather_flat_param

    def ag(self, *a, **k):
        CTX.append(("_all_gather_flat_param", _unit_of_handle(self)))
        try:
            return orig_ag(self, *a, **k)
        finally:
            CTX.pop()

    fpm.FlatParamHandle._all_gather_flat_param = ag

    def patch(mod_list, name, handle_pos, record=True):
        f = getattr(ru, name)

        @functools.wraps(f)
        def w(*a, **k):
            h = a[handle_pos] if len(a) > handle_pos else None
            u = _unit_of_handle(h) if h is not None and not isinstance(h, nn.Module) else None
            if name == "_prefetch_handle":
                # (state, current_handle, prefetch_mode)
                mode = str(a[2]) if len(a) > 2 else None
                if record:
                    _hook_event(name + ".enter", u, {"mode": mode})
            elif record:
                _hook_event(name, u)
            if name == "_post_backward_hook":
                if h is not None and not h.uses_sharded_strategy:
                    NOSHARD_PENDING[u] = True
                _mem_sweep(name + ".enter")
            CTX.append((name, u))
            try:
                return f(*a, **k)
            finally:
                CTX.pop()
                if name == "_reduce_grad_no_shard":
                    NOSHARD_PENDING[u] = False
                _mem_sweep(name)

        for m in mod_list:
            if hasattr(m, name) and getattr(m, name) is f:
                setattr(m, name, w)
        setattr(ru, name, w)

    mods = [ru, fsdpm]
    patch(mods, "_pre_forward", 1)           # (state, handle, unshard_fn, module, args, kwargs)
    patch(mods, "_post_forward", 1)          # (state, handle, reshard_fn, module, input, output)
    patch(mods, "_pre_backward_hook", 2)     # (state, module, handle, grad, *unused)
    patch(mods, "_post_backward_hook", 1)    # (state, handle, flat_param, *unused)
    patch(mods, "_prefetch_handle", 1)       # (state, current_handle, prefetch_mode)
    patch(mods, "_unshard", 1)               # (state, handle, unshard_stream, pre_unshard_stream)
    patch(mods, "_reshard", 1)               # (state, handle, free_unsharded_flat_param)
    patch(mods, "_reduce_grad", 1)           # (state, handle)
    patch(mods, "_reduce_grad_no_shard", 1)  # (state, handle)
    patch(mods, "_post_backward_final_callback", 99)
    patch(mods, "_root_pre_forward", 99)
    patch(mods, "_lazy_init", 99)


# ----------------------------------------------------------------------------
# run one rank
# ----------------------------------------------------------------------------


def clean_name(n):
    return n.replace("_fsdp_wrapped_module.", "").replace("_checkpoint_wrapped_module.", "").replace(
        "._fsdp_wrapped_module", "").replace("._checkpoint_wrapped_module", "").replace(
        "_fsdp_wrapped_module", "").replace("_checkpoint_wrapped_module", "")


def build_and_run(rank, world, cfg, outdir):
    from torch.distributed.fsdp import (
        FullyShardedDataParallel as FSDP,
        ShardingStrategy,
        BackwardPrefetch,
        MixedPrecision,
    )
    from torch.distributed.fsdp.wrap import (
        size_based_auto_wrap_policy,
        transformer_auto_wrap_policy,
    )
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        apply_activation_checkpointing,
        checkpoint_wrapper,
        CheckpointImpl,
    )

    torch.manual_seed(0)
    torch.set_num_threads(1)
    install_collective_patches()
    install_fsdp_patches()

    if cfg["model"] == "toy":
        model = ToyModel(*cfg.get("toy_dims", (1024, 2048, 4096)))
        layer_cls = None
    else:
        model = LlamaForCausalLM(**cfg.get("llama", {}))
        layer_cls = LlamaDecoderLayer

    ac = cfg.get("ac", "none")  # none | nonreentrant | reentrant (both inside the unit) | *_outer (around it)
    def ac_apply(m):
        impl = CheckpointImpl.REENTRANT if ac.startswith("reentrant") else CheckpointImpl.NO_REENTRANT
        apply_activation_checkpointing(
            m,
            checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper, checkpoint_impl=impl),
            check_fn=lambda mm: isinstance(mm, LlamaDecoderLayer),
        )

    if ac.endswith("_outer"):
        ac_apply(model)  # CheckpointWrapper(FSDP(layer)) after wrapping

    kw = {}
    pol = cfg.get("policy", "none")
    if pol == "size":
        kw["auto_wrap_policy"] = functools.partial(
            size_based_auto_wrap_policy, min_num_params=int(float(cfg["min_num_params"]))
        )
    elif pol == "transformer":
        kw["auto_wrap_policy"] = functools.partial(
            transformer_auto_wrap_policy, transformer_layer_cls={layer_cls}
        )
    ss = cfg.get("sharding_strategy", "FULL_SHARD")
    kw["sharding_strategy"] = getattr(ShardingStrategy, ss)
    bp = cfg.get("backward_prefetch", "BACKWARD_PRE")
    kw["backward_prefetch"] = None if bp in (None, "None") else getattr(BackwardPrefetch, bp)
    kw["forward_prefetch"] = bool(cfg.get("forward_prefetch", False))
    kw["limit_all_gathers"] = bool(cfg.get("limit_all_gathers", True))
    kw["use_orig_params"] = bool(cfg.get("use_orig_params", False))
    if cfg.get("mp"):
        kw["mixed_precision"] = MixedPrecision(
            param_dtype=getattr(torch, cfg["mp"]["param_dtype"]),
            reduce_dtype=getattr(torch, cfg["mp"]["reduce_dtype"]),
        )
    kw["device_id"] = torch.device("cpu")
    if ss in ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"):
        gpn = cfg["gpus_per_node"]
        nn_ = world // gpn
        my_shard = my_rep = None
        for n in range(nn_):
            g = dist.new_group(list(range(n * gpn, (n + 1) * gpn)))
            if rank // gpn == n:
                my_shard = g
        for l in range(gpn):
            g = dist.new_group([n * gpn + l for n in range(nn_)])
            if rank % gpn == l:
                my_rep = g
        kw["process_group"] = (my_shard, my_rep)

    REC["phase"] = "construct"
    fsdp_model = FSDP(model, **kw)
    if ac in ("nonreentrant", "reentrant"):
        ac_apply(fsdp_model)  # FSDP(CheckpointWrapper(layer)): checkpoint inside the unit

    for m in FSDP.fsdp_modules(fsdp_model):
        if getattr(m, "_inter_node_pg", None) is not None:
            PG_LABEL[id(m._inter_node_pg)] = "replicate"
        PG_LABEL[id(m.process_group)] = "shard"
    for i, m in enumerate(FSDP.fsdp_modules(fsdp_model)):
        STATE2UNIT[id(m)] = i
        if m._handle is not None:
            HANDLE2UNIT[id(m._handle)] = i
            MEM_HANDLES.append((i, m._handle))

    opt = torch.optim.AdamW(fsdp_model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1234 + rank)

    def batch():
        if cfg["model"] == "toy":
            return (torch.randn(cfg.get("batch", 1), cfg.get("toy_dims", (1024,))[0], generator=g),)
        V = cfg.get("llama", {}).get("vocab", 1000)
        S = cfg.get("seq", 64)
        B = cfg.get("batch", 1)
        ids = torch.randint(0, V, (B, S), generator=g)
        return (ids, torch.randint(0, V, (B, S), generator=g))

    n_iters = cfg.get("warmup", 1) + cfg.get("steps", 2)
    accum = cfg.get("grad_accum", 1)
    no_sync = cfg.get("no_sync", False)
    for it in range(n_iters):
        REC["iter"] = it
        for mb in range(accum):
            REC["micro"] = mb
            ctxm = fsdp_model.no_sync() if (no_sync and mb < accum - 1) else _nullctx()
            with ctxm:
                REC["phase"] = "forward"
                out = fsdp_model(*batch())
                loss = out.float().pow(2).mean() if cfg["model"] == "toy" else out
                _mem_sweep("end_forward")
                REC["phase"] = "backward"
                loss.backward()
                _mem_sweep("end_backward")
        REC["phase"] = "optimizer"
        _hook_event("optimizer.step", None)
        opt.step()
        opt.zero_grad(set_to_none=True)
        _mem_sweep("end_optimizer")
    REC["phase"] = "done"
    # unit table (pre-order == FSDP.fsdp_modules order)
    units = []
    name_of = {id(m): n for n, m in fsdp_model.named_modules()}
    for i, m in enumerate(FSDP.fsdp_modules(fsdp_model)):
        STATE2UNIT[id(m)] = i
        h = m._handle
        inner = m._fsdp_wrapped_module
        while hasattr(inner, "_checkpoint_wrapped_module"):
            inner = inner._checkpoint_wrapped_module
        u = {
            "id": i,
            "fqn": clean_name(name_of[id(m)]) or "<root>",
            "raw_fqn": name_of[id(m)],
            "class": type(inner).__name__,
            "has_flat_param": h is not None,
        }
        if h is not None:
            HANDLE2UNIT[id(h)] = i
            fp = h.flat_param
            u.update(
                {
                    "numel_unpadded": int(fp._unpadded_unsharded_size.numel()),
                    # after training, so lazy init has set _padded_unsharded_size (sharded strategies only)
                    "numel_padded": int(fp._padded_unsharded_size.numel()) if hasattr(fp, "_padded_unsharded_size") else int(fp._unpadded_unsharded_size.numel()),
                    "uses_sharded_strategy": bool(h.uses_sharded_strategy),
                    "sharding_strategy": str(h._sharding_strategy),
                    "shard_numel": int(fp._sharded_size.numel()),
                    "shard_numel_padded_on_rank": int(fp._shard_numel_padded),
                    "numel_params_only": int(sum(n for n, pad in zip(fp._numels_with_padding, fp._is_padding_mask) if not pad)) if hasattr(fp, "_numels_with_padding") else None,
                    "n_alignment_padding_numel": int(sum(n for n, pad in zip(fp._numels_with_padding, fp._is_padding_mask) if pad)) if hasattr(fp, "_numels_with_padding") else None,
                    "param_fqns": list(fp._fqns),
                    "modules_covered": sorted({pi.module_name for pi in fp._param_infos}, key=lambda s: [int(x) if x.isdigit() else x for x in s.split(".")]),
                    "world_size": h.world_size,
                    "dtype_sharded": str(fp.dtype).replace("torch.", ""),
                }
            )
        else:
            u.update({"numel_unpadded": 0, "numel_padded": 0, "shard_numel": 0, "param_fqns": [], "modules_covered": []})
        units.append(u)

    res = {"rank": rank, "units": units, "events": REC["events"]}
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump(res, f)


class _nullctx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def worker(rank, world, cfg, outdir, backend, initfile):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if backend == "gloo":
        dist.init_process_group("gloo", init_method="file://" + initfile, rank=rank, world_size=world)
    else:
        from torch.testing._internal.distributed.fake_pg import FakeStore  # registers "fake"
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world)
    try:
        build_and_run(rank, world, cfg, outdir)
    finally:
        dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True, help="JSON config (string or file)")
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--backend", default="gloo", choices=["gloo", "fake"])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cfg = json.loads(open(a.config).read() if os.path.exists(a.config) else a.config)
    tmp = tempfile.mkdtemp(prefix="fsdp_oracle_")
    initfile = os.path.join(tmp, "init")
    if a.backend == "gloo":
        import torch.multiprocessing as mp

        mp.spawn(worker, args=(a.world, cfg, tmp, "gloo", initfile), nprocs=a.world, join=True)
        ranks = list(range(a.world))
    else:
        worker(0, a.world, cfg, tmp, "fake", initfile)
        ranks = [0]
    per_rank = [json.load(open(os.path.join(tmp, f"rank{r}.json"))) for r in ranks]

    def sig(evs):
        return [(e["kind"], e["unit"], e["numel"], e["dtype"], e["phase"], e["iter"], e["micro"], e["pg_size"])
                for e in evs if e["type"] == "collective"]

    identical = all(sig(p["events"]) == sig(per_rank[0]["events"]) for p in per_rank)
    r0 = per_rank[0]
    header = {
        "torch_version": torch.__version__,
        "backend": a.backend,
        "world_size": a.world,
        "produced_by": "python oracle.py --config '%s' --world %d --backend %s --out %s"
        % (json.dumps(cfg), a.world, a.backend, a.out),
        "config": cfg,
        "ranks_recorded": ranks,
        "collective_sequences_identical_across_ranks": identical,
        "notes": "events: type=collective (kind/unit/numel/dtype/bytes/pg, phase from the training loop, "
        "ctx = FSDP functions on the stack) and type=hook (patched FSDP runtime functions, in call order). "
        "Rank 0's events are stored. allgather numel/bytes = whole gathered buffer; reducescatter = whole input "
        "buffer (what NCCL counts). type=mem: a change of a handle's memory state, P unsharded params "
        "(_full_param_padded storage, or NO_SHARD's low-precision _mp_shard), G unsharded gradient, S sharded "
        "gradient; live, bytes (storage size), where (the FSDP function after which, or the phase end). Unit ids = pre-order FSDP.fsdp_modules() index (root = 0).",
    }
    out = {"header": header, "units": r0["units"], "events": r0["events"]}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    n = sum(1 for e in r0["events"] if e["type"] == "collective")
    print(f"wrote {a.out}: {len(r0['units'])} units, {n} collectives, identical_across_ranks={identical}")


if __name__ == "__main__":
    main()
