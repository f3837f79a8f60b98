#!/usr/bin/env python3
"""Record every FSDP2 configuration of CONFIGS with oracle_fsdp2.py (fake
process group, world 8) into tests/data/oracle/, and print the lines of
tests/data/oracle/records.list that pair each record with the fsdpsim
arguments of the same run."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(os.path.dirname(HERE), "data", "oracle")
LLAMA = {"model": "llama", "seq": 64, "warmup": 1, "steps": 2, "memory": True}
SIM_LLAMA = "--model tiny-llama --seq-len 64 --micro-batch 1"
TOYODD = {"model": "toy", "toy_dims": [1001, 2003, 4001], "warmup": 1, "steps": 2,
          "memory": True}
SIM_TOYODD = ("--model @SRCDIR@/tests/data/oracle/toy-odd.ini --micro-batch 1 "
              "--seq-len 1 --auto-wrap-policy none")
ONE_NODE = "--nodes 1 --gpus-per-node 8"

# name, recorder configuration, fsdpsim arguments
CONFIGS = [
    ("llama_f2", {}, ""),
    ("llama_f2_raftrue", {"reshard_after_forward": True}, "--reshard-after-forward true"),
    ("llama_f2_raffalse", {"reshard_after_forward": False}, "--reshard-after-forward false"),
    ("llama_f2_raf4", {"reshard_after_forward": 4}, "--reshard-after-forward 4"),
    ("llama_f2_mp_bf16_fp32", {"mp": {"param_dtype": "bfloat16", "reduce_dtype": "float32"}},
     "--param-dtype bf16 --reduce-dtype fp32"),
    ("llama_f2_hsdp_2x4", {"replicate": 2}, "--nodes 2 --gpus-per-node 4 --dp-replicate 2"),
    ("llama_f2_accum3", {"grad_accum": 3}, "--grad-accum 3"),
    ("llama_f2_accum3_nosync", {"grad_accum": 3, "no_sync": True}, "--grad-accum 3 --no-sync"),
    ("toyodd_f2", {}, ""),
    ("llama_f2_fwdprefetch1", {"forward_prefetch": 1}, "--forward-prefetch true"),
    ("llama_f2_prefetch2", {"forward_prefetch": 2, "backward_prefetch": 2},
     "--forward-prefetch 2 --backward-prefetch 2"),
    ("llama_f2_bwdprefetch3", {"backward_prefetch": 3}, "--backward-prefetch 3"),
    ("llama_f2_raflast", {"reshard_after_forward_last": False},
     "--reshard-after-forward-last false"),
    ("llama_f2_raftrue_raflast", {"reshard_after_forward": True,
                                  "reshard_after_forward_last": False},
     "--reshard-after-forward true --reshard-after-forward-last false"),
    ("llama_f2_raf4_raflast", {"reshard_after_forward": 4,
                               "reshard_after_forward_last": False},
     "--reshard-after-forward 4 --reshard-after-forward-last false"),
    ("llama_f2_accum3_rab", {"grad_accum": 3, "reshard_after_backward": False},
     "--grad-accum 3 --reshard-after-backward false"),
    ("llama_f2_accum3_nosync_rab", {"grad_accum": 3, "no_sync": True,
                                    "reshard_after_backward": False},
     "--grad-accum 3 --no-sync --reshard-after-backward false"),
    ("llama_f2_accum3_nosync_rab_raffalse", {"grad_accum": 3, "no_sync": True,
                                             "reshard_after_backward": False,
                                             "reshard_after_forward": False},
     "--grad-accum 3 --no-sync --reshard-after-backward false "
     "--reshard-after-forward false"),
    ("llama_f2_hsdp_2x4_accum3_noar", {"replicate": 2, "grad_accum": 3,
                                       "requires_all_reduce": False},
     "--nodes 2 --gpus-per-node 4 --dp-replicate 2 --grad-accum 3 "
     "--requires-all-reduce false"),
    # torchtitan's groups (oracle_fsdp2.py "groups"): today's
    # tok_embeddings / blocks / [norm, output] / root, and v0.1.0's
    # blocks / root with its reshard_after_forward values.
    ("llama_f2_titan", {"groups": "torchtitan"}, "--fsdp2-groups torchtitan"),
    ("llama_f2_titan_mp_bf16_fp32", {"groups": "torchtitan",
                                     "mp": {"param_dtype": "bfloat16",
                                            "reduce_dtype": "float32"}},
     "--fsdp2-groups torchtitan --param-dtype bf16 --reduce-dtype fp32"),
    ("llama_f2_titan_raflast_true", {"groups": "torchtitan",
                                     "reshard_after_forward_last": True},
     "--fsdp2-groups torchtitan --reshard-after-forward-last true"),
    ("llama_f2_titanblocks", {"groups": "torchtitan-blocks"},
     "--fsdp2-groups torchtitan-blocks"),
    # set_unshard_in_backward(False) on the embedding group
    ("llama_f2_titan_nounshard_emb", {"groups": "torchtitan",
                                      "no_unshard_in_backward": ["model.embed_tokens"]},
     "--fsdp2-groups torchtitan --no-unshard-in-backward model.embed_tokens"),
    # set_modules_to_{forward,backward}_prefetch lists of other shapes
    # ("" is the root, tiny-llama in fsdpsim's arguments)
    ("llama_f2_fwdlists", {"forward_prefetch_lists": {
        "": ["model.layers.1", "model.layers.0"], "model.layers.1": ["model.layers.3"]}},
     "--modules-to-forward-prefetch tiny-llama=model.layers.1,model.layers.0 "
     "--modules-to-forward-prefetch model.layers.1=model.layers.3"),
    ("llama_f2_bwdlists", {"backward_prefetch_lists": {
        "": ["model.layers.2", "model.layers.3"], "model.layers.3": ["model.layers.0"],
        "model.layers.2": []}},
     "--modules-to-backward-prefetch tiny-llama=model.layers.2,model.layers.3 "
     "--modules-to-backward-prefetch model.layers.3=model.layers.0 "
     "--modules-to-backward-prefetch model.layers.2="),
    ("llama_f2_titan_lists", {"groups": "torchtitan", "forward_prefetch_lists": {
        "": ["model.embed_tokens", "model.layers.0"]}, "backward_prefetch_lists": {
        "": ["model.layers.3", "model.layers.2"], "model.layers.1": ["model.embed_tokens"]}},
     "--fsdp2-groups torchtitan "
     "--modules-to-forward-prefetch tiny-llama=model.embed_tokens,model.layers.0 "
     "--modules-to-backward-prefetch tiny-llama=model.layers.3,model.layers.2 "
     "--modules-to-backward-prefetch model.layers.1=model.embed_tokens"),
    # each block its own reshard_after_forward: meshes of 4 and 2 ranks
    ("llama_f2_groupraf_4_2_false", {"group_reshard_after_forward": {
        "model.layers.0": 4, "model.layers.1": 2, "model.layers.2": False}},
     "--group-reshard-after-forward model.layers.0=4 "
     "--group-reshard-after-forward model.layers.1=2 "
     "--group-reshard-after-forward model.layers.2=false"),
    ("llama_f2_raf4_groupraf_2", {"reshard_after_forward": 4,
                                  "group_reshard_after_forward": {"model.layers.1": 2,
                                                                  "model.layers.3": 8}},
     "--reshard-after-forward 4 --group-reshard-after-forward model.layers.1=2 "
     "--group-reshard-after-forward model.layers.3=8"),
    ("llama_f2_titan_nounshard_emb_accum2", {"groups": "torchtitan", "grad_accum": 2,
                                             "no_unshard_in_backward": ["model.embed_tokens"]},
     "--fsdp2-groups torchtitan --no-unshard-in-backward model.embed_tokens --grad-accum 2"),
    # mixed precision with accumulation, HSDP and the 4-rank post-forward mesh
    ("llama_f2_mp_bf16_fp32_accum3", {"mp": {"param_dtype": "bfloat16", "reduce_dtype": "float32"},
                                      "grad_accum": 3},
     "--param-dtype bf16 --reduce-dtype fp32 --grad-accum 3"),
    ("llama_f2_mp_bf16_fp32_accum3_nosync", {"mp": {"param_dtype": "bfloat16",
                                                    "reduce_dtype": "float32"},
                                             "grad_accum": 3, "no_sync": True},
     "--param-dtype bf16 --reduce-dtype fp32 --grad-accum 3 --no-sync"),
    ("llama_f2_hsdp_2x4_mp_bf16_fp32", {"replicate": 2, "mp": {"param_dtype": "bfloat16",
                                                               "reduce_dtype": "float32"}},
     "--nodes 2 --gpus-per-node 4 --dp-replicate 2 --param-dtype bf16 --reduce-dtype fp32"),
    ("llama_f2_raf4_accum3", {"reshard_after_forward": 4, "grad_accum": 3},
     "--reshard-after-forward 4 --grad-accum 3"),
    ("llama_f2_titan_accum2_nosync", {"groups": "torchtitan", "grad_accum": 2, "no_sync": True},
     "--fsdp2-groups torchtitan --grad-accum 2 --no-sync"),
    ("toyodd_f2_mp_bf16_fp32", {"mp": {"param_dtype": "bfloat16", "reduce_dtype": "float32"}},
     "--param-dtype bf16 --reduce-dtype fp32"),
]

for name, extra, sim in CONFIGS:
    base, sim_base = (TOYODD, SIM_TOYODD) if name.startswith("toyodd") else (LLAMA, SIM_LLAMA)
    cfg = dict(base, **extra)
    out = os.path.join(ROOT, name + "_w8.torch.json")
    # --only NAME ...: record these alone (every line is still printed)
    if "--only" not in sys.argv or name in sys.argv:
        subprocess.run([sys.executable, os.path.join(HERE, "oracle_fsdp2.py"), "--config",
                        json.dumps(cfg), "--world", "8", "--out", out], check=True,
                       stderr=subprocess.DEVNULL)
    nodes = "" if "--nodes" in sim else ONE_NODE
    print("%s_w8 %s --topology test-2x4 --iterations 3 %s --fsdp-version 2 %s"
          % (name, sim_base, nodes, sim), flush=True)
