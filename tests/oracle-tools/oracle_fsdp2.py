#!/usr/bin/env python3
"""Ground-truth oracle for FSDP2: run REAL PyTorch fully_shard on CPU and
record every collective it issues, in the record format of oracle.py (the
FSDP1 recorder), so that tests/check_oracle compares them with
`fsdpsim schedule --fsdp-version 2`.

One process, rank 0 of a fake process group of --world ranks
(torch.testing._internal.distributed.fake_pg): the collectives move nothing,
fully_shard issues exactly the calls it would.  Models are oracle.py's (the
tiny Llama in Hugging Face's registration order, matching fsdpsim's
built-in tiny-llama; the toy with odd widths, tests/data/oracle/toy-odd.ini).

fully_shard is applied as torchtitan does: to each LlamaDecoderLayer, then
to the root (for the toy: the root only).  Instrumentation (monkeypatches):
  * torch.distributed.all_gather_into_tensor (all_gather_single in newer
    releases), reduce_scatter_tensor (reduce_scatter_single), all_reduce: kind, element count, dtype, bytes (the gathered output; the
    reduce-scatter's whole input; the all-reduced tensor), process group
    ("shard", "replicate", "post_forward" for the mesh of
    reshard_after_forward=N), and the parameter group it is for (the
    FSDPParamGroup on the call stack);
  * FSDPParamGroup.post_forward and post_backward, recorded as hook events
    "_post_forward" and "_post_backward_hook" (the names check_oracle reads
    for FSDP1's hooks);
  * with "memory": true in the configuration, memory events (type "mem",
    what "P" only, header mem_what ["P"]): a group's unsharded parameters
    becoming live or freed, swept after every FSDPParamGroup runtime
    method returns (unshard, wait_for_unshard, reshard, pre_forward,
    post_forward, pre_backward, post_backward) and at the end of each
    phase.  P is the bytes of the group's FSDPParam.all_gather_outputs
    storages (the padded unsharded data its parameters view, allocated at
    copy-out, freed by free_unsharded_param), plus a post-forward shard's
    _sharded_post_forward_param_data.
Units: the parameter groups in module pre-order (root first): class, the
parameters' numel, the padded all-gather numel (world x the sum of each
parameter's padded_sharded_param_size) and the shard numel.
"""
import argparse
import inspect
import json
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import LlamaDecoderLayer, LlamaForCausalLM, ToyModel  # noqa: E402

REC = {"phase": "init", "iter": -1, "micro": -1, "events": []}
GROUP2UNIT = {}  # id(FSDPParamGroup) -> unit index
MEM_GROUPS = []  # (unit, FSDPParamGroup) when memory is recorded
MEM_STATE = {}  # unit -> last P bytes


def _storage_bytes(t):
    return int(t.untyped_storage().nbytes()) if t is not None else 0


def _mem_sweep(where):
    if not MEM_GROUPS or REC["phase"] not in ("forward", "backward", "optimizer"):
        return
    for u, pg in MEM_GROUPS:
        p = 0
        for fp in pg.fsdp_params:
            p += sum(_storage_bytes(t) for t in getattr(fp, "all_gather_outputs", []))
            p += _storage_bytes(getattr(fp, "_sharded_post_forward_param_data", None))
        old = MEM_STATE.get(u, 0)
        if (p > 0) != (old > 0):
            REC["events"].append({
                "type": "mem", "what": "P", "unit": u, "live": p > 0,
                "bytes": p if p > 0 else old, "where": where,
                "iter": REC["iter"], "micro": REC["micro"], "phase": REC["phase"]})
        MEM_STATE[u] = p
PG_LABEL = {}  # id(process group) -> label


def _current_unit():
    for fr in inspect.stack()[2:]:
        s = fr.frame.f_locals.get("self")
        if s is not None and type(s).__name__ == "FSDPParamGroup":
            return GROUP2UNIT.get(id(s))
    return None


def _record(kind, t, group):
    if REC["phase"] not in ("forward", "backward", "optimizer"):
        return
    REC["events"].append({
        "type": "collective", "kind": kind, "iter": REC["iter"],
        "micro": REC["micro"], "phase": REC["phase"],
        "numel": int(t.numel()), "dtype": str(t.dtype).replace("torch.", ""),
        "bytes": int(t.numel() * t.element_size()),
        "pg_size": dist.get_world_size(group),
        "pg": PG_LABEL.get(id(group), "other"),
        "unit": _current_unit(),
    })


def install_patches():
    # fully_shard calls all_gather_into_tensor / reduce_scatter_tensor up to
    # torch 2.10 or so, all_gather_single / reduce_scatter_single later
    # (_fsdp_collectives.py DefaultAllGather, DefaultReduceScatter).
    def wrap(name, kind, pick):
        fn = getattr(dist, name, None)
        if fn is None:
            return

        def wrapper(*a, **k):
            t, group = pick(*a, **k)
            _record(kind, t, group)
            return fn(*a, **k)
        setattr(dist, name, wrapper)

    def gather(output_tensor, input_tensor, group=None, async_op=False):
        return output_tensor, group

    def scatter(output, input, op=None, group=None, async_op=False):
        return input, group

    def reduce(tensor, op=None, group=None, async_op=False):
        return tensor, group

    for name in ("all_gather_into_tensor", "all_gather_single"):
        wrap(name, "allgather", gather)
    for name in ("reduce_scatter_tensor", "reduce_scatter_single"):
        wrap(name, "reducescatter", scatter)
    wrap("all_reduce", "allreduce", reduce)

    from torch.distributed.fsdp._fully_shard._fsdp_param_group import FSDPParamGroup

    def hooked(name, fn):
        def wrapper(self, *a, **k):
            if REC["phase"] in ("forward", "backward"):
                REC["events"].append({
                    "type": "hook", "name": name, "unit": GROUP2UNIT.get(id(self)),
                    "iter": REC["iter"], "micro": REC["micro"], "phase": REC["phase"]})
            return fn(self, *a, **k)
        return wrapper

    FSDPParamGroup.post_forward = hooked("_post_forward", FSDPParamGroup.post_forward)
    FSDPParamGroup.post_backward = hooked("_post_backward_hook", FSDPParamGroup.post_backward)

    def swept(name, fn):
        def wrapper(self, *a, **k):
            out = fn(self, *a, **k)
            _mem_sweep(name)
            return out
        return wrapper

    for name in ("unshard", "wait_for_unshard", "reshard", "pre_forward", "post_forward",
                 "pre_backward", "post_backward"):
        setattr(FSDPParamGroup, name, swept(name, getattr(FSDPParamGroup, name)))


def run(cfg, world):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    torch.manual_seed(0)
    torch.set_num_threads(1)
    install_patches()
    if cfg["model"] == "toy":
        model = ToyModel(*cfg.get("toy_dims", (1024, 2048, 4096)))
    else:
        model = LlamaForCausalLM(**cfg.get("llama", {}))
    rep = cfg.get("replicate", 1)
    if rep > 1:
        mesh = init_device_mesh("cpu", (rep, world // rep), mesh_dim_names=("replicate", "shard"))
        PG_LABEL[id(mesh.get_group("replicate"))] = "replicate"
        PG_LABEL[id(mesh.get_group("shard"))] = "shard"
    else:
        mesh = init_device_mesh("cpu", (world,))
        PG_LABEL[id(mesh.get_group())] = "shard"
    kw = {"mesh": mesh}
    if cfg.get("mp"):
        kw["mp_policy"] = MixedPrecisionPolicy(
            param_dtype=getattr(torch, cfg["mp"]["param_dtype"]),
            reduce_dtype=getattr(torch, cfg["mp"]["reduce_dtype"]))
    if "reshard_after_forward" in cfg:  # else fully_shard's None
        kw["reshard_after_forward"] = cfg["reshard_after_forward"]
    if cfg.get("groups") == "torchtitan":
        # torchtitan's apply_fsdp since v0.2.0 (#1094, 2025-07-28;
        # apply_fsdp_to_decoder in torchtitan/distributed/fsdp.py today)
        # with its "default" reshard_after_forward policy and no pipeline:
        # tok_embeddings and each block True, [norm, output] as one group
        # False, the root (no parameters left) None.  The Hugging Face
        # layout's norm is model.model.norm, its output model.lm_head.
        raf = cfg.get("reshard_after_forward", True)
        fully_shard(model.model.embed_tokens, **dict(kw, reshard_after_forward=raf))
        for layer in model.model.layers:
            fully_shard(layer, **dict(kw, reshard_after_forward=raf))
        fully_shard([model.model.norm, model.lm_head],
                    **dict(kw, reshard_after_forward=cfg.get("reshard_after_forward_last", False)))
        kw.pop("reshard_after_forward", None)
    elif cfg.get("groups") == "torchtitan-blocks":
        # torchtitan's apply_fsdp up to v0.1.0 (torchtitan/parallelisms/
        # parallelize_llama.py at 9dec370, models/llama3/parallelize_llama.py
        # at 820504e): each block True but the last False, then the root
        # True (reshard_after_forward=not pp_enabled).
        layers = list(model.model.layers)
        for i, layer in enumerate(layers):
            fully_shard(layer, **dict(kw, reshard_after_forward=i < len(layers) - 1))
        kw["reshard_after_forward"] = True
    elif cfg["model"] != "toy":
        layers = list(model.model.layers)
        for i, layer in enumerate(layers):
            lkw = dict(kw)
            if i == len(layers) - 1 and "reshard_after_forward_last" in cfg:
                # torchtitan before #1094 (2025-07): the last block keeps
                # its parameters, its backward comes first.
                lkw["reshard_after_forward"] = cfg["reshard_after_forward_last"]
            # A block's own value, an int giving it a post-forward mesh of
            # its own (_get_post_forward_mesh_info).
            own = cfg.get("group_reshard_after_forward", {})
            if "model.layers.%d" % i in own:
                lkw["reshard_after_forward"] = own["model.layers.%d" % i]
            fully_shard(layer, **lkw)
    rkw = dict(kw)
    if "reshard_after_forward_root" in cfg:
        rkw["reshard_after_forward"] = cfg["reshard_after_forward_root"]
    fully_shard(model, **rkw)
    # Explicit prefetching, each group the next N in its pass's order (as
    # torchtitan chains its groups, and pytorch/examples' FSDP2 example
    # with --explicit-prefetching gives N): forward order = the groups'
    # pre-order (root first), backward order = the reverse post-forward
    # order (root first, then the last layer down to the first).
    fsdp_mods = [m for m in model.modules() if hasattr(m, "set_modules_to_forward_prefetch")]
    nf = cfg.get("forward_prefetch", 0)
    if nf:
        for i, m in enumerate(fsdp_mods):
            if fsdp_mods[i + 1:i + 1 + nf]:
                m.set_modules_to_forward_prefetch(fsdp_mods[i + 1:i + 1 + nf])
    nb = cfg.get("backward_prefetch", 0)
    if nb:
        bwd = [fsdp_mods[0]] + list(reversed(fsdp_mods[1:]))
        for i, m in enumerate(bwd):
            if bwd[i + 1:i + 1 + nb]:
                m.set_modules_to_backward_prefetch(bwd[i + 1:i + 1 + nb])

    # Lists of any shape: {"GROUP FQN": ["TARGET FQN", ...]}, "" the root,
    # set after the next-N lists above (a group's own list replaces its
    # next-N one, as a second call does).
    for key, setter in (("forward_prefetch_lists", "set_modules_to_forward_prefetch"),
                        ("backward_prefetch_lists", "set_modules_to_backward_prefetch")):
        for fqn, targets in cfg.get(key, {}).items():
            getattr(model.get_submodule(fqn), setter)(
                [model.get_submodule(t) for t in targets])
    for fqn in cfg.get("no_unshard_in_backward", []):
        # FSDPModule.set_unshard_in_backward(False): the group's unshard
        # returns at once in backward (the embedding's weight is not read
        # there).
        model.get_submodule(fqn).set_unshard_in_backward(False)

    # Units: the FSDP states in pre-order, a group of several modules
    # (fully_shard([a, b])) once, at its first; a state left with no
    # parameters (the root under torchtitan's groups) has no parameter
    # group and is listed with numel 0.
    units = []
    seen = set()
    for fqn, m in model.named_modules():
        st = getattr(m, "_get_fsdp_state", None)
        if st is None or id(st()) in seen:
            continue
        seen.add(id(st()))
        pg = st()._fsdp_param_group
        if pg is None:
            if fqn == "":
                units.append({"id": len(units), "fqn": "<root>",
                              "class": type(m).__name__.replace("FSDP", "", 1),
                              "has_flat_param": False, "numel_unpadded": 0,
                              "numel_padded": 0, "shard_numel": 0,
                              "world_size": world, "param_fqns": []})
            continue
        GROUP2UNIT[id(pg)] = len(units)
        W = pg.mesh_info.shard_mesh_size
        padded = sum(int(p.padded_sharded_param_size.numel()) for p in pg.fsdp_params)
        units.append({
            "id": len(units), "fqn": fqn or "<root>", "class": type(m).__name__.replace("FSDP", "", 1),
            "has_flat_param": True,
            "numel_unpadded": sum(int(p._orig_size.numel()) for p in pg.fsdp_params),
            "numel_padded": padded * W, "shard_numel": padded, "world_size": W,
            "param_fqns": [p._param_fqn for p in pg.fsdp_params],
        })
        if cfg.get("memory"):
            MEM_GROUPS.append((len(units) - 1, pg))
        pf = pg.post_forward_mesh_info
        if pf is not None and pf.shard_process_group is not None \
                and id(pf.shard_process_group) not in PG_LABEL:
            PG_LABEL[id(pf.shard_process_group)] = "post_forward"

    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1234)

    def batch():
        if cfg["model"] == "toy":
            return (torch.randn(cfg.get("batch", 1), cfg.get("toy_dims", (1024,))[0], generator=g),)
        V = cfg.get("llama", {}).get("vocab", 1000)
        S, B = cfg.get("seq", 64), cfg.get("batch", 1)
        return (torch.randint(0, V, (B, S), generator=g), torch.randint(0, V, (B, S), generator=g))

    accum = cfg.get("grad_accum", 1)
    for it in range(cfg.get("warmup", 1) + cfg.get("steps", 2)):
        REC["iter"] = it
        for mb in range(accum):
            REC["micro"] = mb
            if cfg.get("no_sync"):
                model.set_requires_gradient_sync(mb == accum - 1)
            if cfg.get("reshard_after_backward") is False:
                # Keep the parameters unsharded between the micro-batches
                # of a step; the last backward reshards before the
                # optimizer updates the shards.
                model.set_reshard_after_backward(mb == accum - 1)
            if cfg.get("requires_all_reduce") is False:
                # HSDP: reduce-scatter every micro-batch, all-reduce the
                # summed shards once, on the last.
                model.set_requires_all_reduce(mb == accum - 1)
            REC["phase"] = "forward"
            out = model(*batch())
            loss = out.float().pow(2).mean() if cfg["model"] == "toy" else out
            _mem_sweep("end_forward")
            REC["phase"] = "backward"
            loss.backward()
            _mem_sweep("end_backward")
        REC["phase"] = "optimizer"
        opt.step()
        opt.zero_grad(set_to_none=True)
        _mem_sweep("end_optimizer")
    REC["phase"] = "done"
    return units


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True, help="JSON configuration")
    ap.add_argument("--world", type=int, default=8)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cfg = json.loads(a.config)
    from torch.testing._internal.distributed.fake_pg import FakeStore  # registers "fake"
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=a.world)
    try:
        units = run(cfg, a.world)
    finally:
        dist.destroy_process_group()
    header = {
        "torch_version": torch.__version__, "backend": "fake", "world_size": a.world,
        "api": "fully_shard (FSDP2)",
        "produced_by": "python oracle_fsdp2.py --config '%s' --world %d --out %s"
        % (json.dumps(cfg), a.world, os.path.basename(a.out)),
        "config": cfg, "ranks_recorded": [0],
        **({"mem_what": ["P"]} if cfg.get("memory") else {}),
        "notes": "events: type=collective (kind/unit/numel/dtype/bytes/pg; allgather = the gathered "
        "output, reducescatter = its whole input, allreduce = the tensor; phase from the training loop) "
        "and type=hook (FSDPParamGroup.post_forward as _post_forward, post_backward as "
        "_post_backward_hook). Units = parameter groups in module pre-order (root = 0).",
    }
    with open(a.out, "w") as f:
        json.dump({"header": header, "units": units, "events": REC["events"]}, f, indent=1)
    n = sum(1 for e in REC["events"] if e["type"] == "collective")
    print("wrote %s: %d units, %d collectives" % (a.out, len(units), n))


if __name__ == "__main__":
    main()
