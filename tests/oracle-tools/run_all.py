#!/usr/bin/env python3
"""Driver: for each configuration run the PyTorch oracle (oracle.py) and the
equivalent `fsdpsim schedule --format json`, then diff them (compare.py).

Outputs (under $ORACLE_OUT, default ./oracle-out; set ORACLE_PYTHON to a Python with torch, FSDPSIM to the binary):
  data/<name>.torch.json    oracle recording (header: torch version, backend, exact command)
  data/<name>.fsdpsim.json  fsdpsim schedule output
  diffs/<name>.txt          compare.py output
  commands.txt              every fsdpsim and oracle command run
  summary.tsv               name, world, backend, torch units, fsdpsim units, verdicts
Usage: run_all.py [--only SUBSTR] [--force]
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
PY = os.environ.get("ORACLE_PYTHON", sys.executable)   # a Python with torch installed
OUT = os.path.abspath(os.environ.get("ORACLE_OUT", "oracle-out"))   # where results go (ROOT may be read-only)
SIM = os.environ.get("FSDPSIM", "./fsdpsim")
WARMUP, STEPS = 1, 2
ITERS = WARMUP + STEPS

LLAMA = {"model": "llama", "llama": {"vocab": 1000, "hidden": 256, "layers": 4, "heads": 4, "ffn": 688}, "seq": 64, "batch": 1}
TOY = {"model": "toy", "batch": 1}
TOYODD = {"model": "toy", "toy_dims": [1001, 2003, 4001], "batch": 1}
SIM_LLAMA = ["--model", "tiny-llama", "--seq-len", "64", "--micro-batch", "1"]
SIM_TOY = ["--model", "toy", "--micro-batch", "1", "--seq-len", "1"]
SIM_TOYODD = ["--model", os.path.join(os.path.dirname(ROOT), "data", "oracle", "toy-odd.ini"), "--micro-batch", "1", "--seq-len", "1"]
TR = {"policy": "transformer"}
SIM_TR = ["--auto-wrap-policy", "transformer"]


def C(name, base, extra, sim_base, sim_extra, worlds=(2, 4)):
    return [(name, base, extra, sim_base, sim_extra, w) for w in worlds]


CONFIGS = []
# a. toy
for mnp in ("1e5", "1e6", "1e7"):
    CONFIGS += C("toy_size_%s" % mnp, TOY, {"policy": "size", "min_num_params": float(mnp)}, SIM_TOY,
                 ["--auto-wrap-policy", "size", "--min-num-params", mnp])
CONFIGS += C("toy_nowrap", TOY, {"policy": "none"}, SIM_TOY, ["--auto-wrap-policy", "size", "--min-num-params", "1e15"])
# toy with odd widths: padding and use_orig_params alignment
for orig in (False, True):
    CONFIGS += C("toyodd_size_1e5_orig%d" % orig, TOYODD, {"policy": "size", "min_num_params": 1e5, "use_orig_params": orig},
                 SIM_TOYODD, ["--auto-wrap-policy", "size", "--min-num-params", "1e5", "--use-orig-params", "true" if orig else "false"])
    CONFIGS += C("toyodd_nowrap_orig%d" % orig, TOYODD, {"policy": "none", "use_orig_params": orig},
                 SIM_TOYODD, ["--auto-wrap-policy", "size", "--min-num-params", "1e15", "--use-orig-params", "true" if orig else "false"])
CONFIGS += C("toyodd_nowrap_orig1_bf16", TOYODD, {"policy": "none", "use_orig_params": True, "mp": {"param_dtype": "bfloat16", "reduce_dtype": "float32"}},
             SIM_TOYODD, ["--auto-wrap-policy", "size", "--min-num-params", "1e15", "--use-orig-params", "true", "--param-dtype", "bf16", "--reduce-dtype", "fp32"])
# b. tiny llama
CONFIGS += C("llama_transformer", LLAMA, TR, SIM_LLAMA, SIM_TR)
for mnp in ("1e5", "2e5", "3e5", "6e5", "1e6", "1e7"):
    CONFIGS += C("llama_size_%s" % mnp, LLAMA, {"policy": "size", "min_num_params": float(mnp)}, SIM_LLAMA,
                 ["--auto-wrap-policy", "size", "--min-num-params", mnp])
CONFIGS += C("llama_nowrap", LLAMA, {"policy": "none"}, SIM_LLAMA, ["--auto-wrap-policy", "size", "--min-num-params", "1e15"])
# c. knobs on tiny llama + transformer policy
for bp in ("BACKWARD_PRE", "BACKWARD_POST", "None"):
    CONFIGS += C("llama_tr_bp_%s" % bp, LLAMA, dict(TR, backward_prefetch=bp), SIM_LLAMA, SIM_TR + ["--backward-prefetch", bp])
CONFIGS += C("llama_tr_fwdprefetch", LLAMA, dict(TR, forward_prefetch=True), SIM_LLAMA, SIM_TR + ["--forward-prefetch", "true"])
CONFIGS += C("llama_tr_fwdprefetch_bppost", LLAMA, dict(TR, forward_prefetch=True, backward_prefetch="BACKWARD_POST"), SIM_LLAMA,
             SIM_TR + ["--forward-prefetch", "true", "--backward-prefetch", "BACKWARD_POST"])
CONFIGS += C("llama_tr_fwdprefetch_origparams", LLAMA, dict(TR, forward_prefetch=True, use_orig_params=True), SIM_LLAMA,
             SIM_TR + ["--forward-prefetch", "true", "--use-orig-params", "true"])
CONFIGS += C("llama_size_2e5_fwdprefetch", LLAMA, {"policy": "size", "min_num_params": 2e5, "forward_prefetch": True}, SIM_LLAMA,
             ["--auto-wrap-policy", "size", "--min-num-params", "2e5", "--forward-prefetch", "true"])
for ss in ("SHARD_GRAD_OP", "NO_SHARD"):
    CONFIGS += C("llama_tr_%s" % ss, LLAMA, dict(TR, sharding_strategy=ss), SIM_LLAMA, SIM_TR + ["--sharding-strategy", ss])
for ss in ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"):
    CONFIGS += [("llama_tr_%s_2x2" % ss, LLAMA, dict(TR, sharding_strategy=ss, gpus_per_node=2), SIM_LLAMA,
                 SIM_TR + ["--sharding-strategy", ss, "--nodes", "2", "--gpus-per-node", "2"], 4)]
CONFIGS += [("llama_tr_HYBRID_SHARD_2x1", LLAMA, dict(TR, sharding_strategy="HYBRID_SHARD", gpus_per_node=1), SIM_LLAMA,
             SIM_TR + ["--sharding-strategy", "HYBRID_SHARD", "--nodes", "2", "--gpus-per-node", "1"], 2)]
for lag in (False,):
    CONFIGS += C("llama_tr_limitag%d" % lag, LLAMA, dict(TR, limit_all_gathers=lag), SIM_LLAMA, SIM_TR + ["--limit-all-gathers", "false"])
CONFIGS += C("llama_tr_origparams", LLAMA, dict(TR, use_orig_params=True), SIM_LLAMA, SIM_TR + ["--use-orig-params", "true"])
CONFIGS += C("llama_tr_mp_bf16_fp32", LLAMA, dict(TR, mp={"param_dtype": "bfloat16", "reduce_dtype": "float32"}), SIM_LLAMA,
             SIM_TR + ["--param-dtype", "bf16", "--reduce-dtype", "fp32"])
CONFIGS += C("llama_tr_mp_bf16", LLAMA, dict(TR, mp={"param_dtype": "bfloat16", "reduce_dtype": "bfloat16"}), SIM_LLAMA,
             SIM_TR + ["--param-dtype", "bf16"])
CONFIGS += C("llama_tr_accum3", LLAMA, dict(TR, grad_accum=3), SIM_LLAMA, SIM_TR + ["--grad-accum", "3"])
CONFIGS += C("llama_tr_accum3_nosync", LLAMA, dict(TR, grad_accum=3, no_sync=True), SIM_LLAMA, SIM_TR + ["--grad-accum", "3", "--no-sync", "true"])
CONFIGS += C("llama_tr_sgo_accum3_nosync", LLAMA, dict(TR, grad_accum=3, no_sync=True, sharding_strategy="SHARD_GRAD_OP"), SIM_LLAMA,
             SIM_TR + ["--grad-accum", "3", "--no-sync", "true", "--sharding-strategy", "SHARD_GRAD_OP"])
CONFIGS += C("llama_tr_ac_nonreentrant", LLAMA, dict(TR, ac="nonreentrant"), SIM_LLAMA, SIM_TR + ["--activation-checkpointing", "full"])
CONFIGS += C("llama_tr_ac_reentrant_inside", LLAMA, dict(TR, ac="reentrant"), SIM_LLAMA, SIM_TR + ["--activation-checkpointing", "full"])
CONFIGS += C("llama_tr_NO_SHARD_accum3", LLAMA, dict(TR, grad_accum=3, sharding_strategy="NO_SHARD"), SIM_LLAMA,
             SIM_TR + ["--grad-accum", "3", "--sharding-strategy", "NO_SHARD"], (2,))
for rd, rname in (("float32", "bf16"), ("bfloat16", "bf16_bf16")):
    CONFIGS += C("llama_tr_NO_SHARD_mp_%s_accum3" % rname, LLAMA,
                 dict(TR, grad_accum=3, sharding_strategy="NO_SHARD", mp={"param_dtype": "bfloat16", "reduce_dtype": rd}), SIM_LLAMA,
                 SIM_TR + ["--grad-accum", "3", "--sharding-strategy", "NO_SHARD", "--param-dtype", "bf16",
                           "--reduce-dtype", "fp32" if rd == "float32" else "bf16"], (2,))
CONFIGS += C("llama_tr_ac_reentrant_outer", LLAMA, dict(TR, ac="reentrant_outer"), SIM_LLAMA, SIM_TR + ["--activation-checkpointing", "reentrant"])
CONFIGS += C("llama_tr_ac_nonreentrant_outer", LLAMA, dict(TR, ac="nonreentrant_outer"), SIM_LLAMA, SIM_TR + ["--activation-checkpointing", "full"])

# Added later (every record of these also has the memory events, type "mem"):
# world 8, more min_num_params, HYBRID_SHARD 2x2 and 2x4, SHARD_GRAD_OP with
# accumulation, the toy with odd widths at worlds 4 and 8.
W8 = (8,)
CONFIGS += C("toy_size_1e5", TOY, {"policy": "size", "min_num_params": 1e5}, SIM_TOY, ["--auto-wrap-policy", "size", "--min-num-params", "1e5"], W8)
CONFIGS += C("toy_size_1e6", TOY, {"policy": "size", "min_num_params": 1e6}, SIM_TOY, ["--auto-wrap-policy", "size", "--min-num-params", "1e6"], W8)
CONFIGS += C("toy_nowrap", TOY, {"policy": "none"}, SIM_TOY, ["--auto-wrap-policy", "none"], W8)
CONFIGS += C("toy_size_3e6", TOY, {"policy": "size", "min_num_params": 3e6}, SIM_TOY, ["--auto-wrap-policy", "size", "--min-num-params", "3e6"], (2, 4, 8))
for orig in (False, True):
    CONFIGS += C("toyodd_size_1e5_orig%d" % orig, TOYODD, {"policy": "size", "min_num_params": 1e5, "use_orig_params": orig},
                 SIM_TOYODD, ["--auto-wrap-policy", "size", "--min-num-params", "1e5", "--use-orig-params", "true" if orig else "false"], W8)
CONFIGS += C("toyodd_size_3e6_orig1", TOYODD, {"policy": "size", "min_num_params": 3e6, "use_orig_params": True},
             SIM_TOYODD, ["--auto-wrap-policy", "size", "--min-num-params", "3e6", "--use-orig-params", "true"], (4, 8))
CONFIGS += C("toyodd_nowrap_orig1_bf16", TOYODD, {"policy": "none", "use_orig_params": True, "mp": {"param_dtype": "bfloat16", "reduce_dtype": "float32"}},
             SIM_TOYODD, ["--auto-wrap-policy", "none", "--use-orig-params", "true", "--param-dtype", "bf16", "--reduce-dtype", "fp32"], W8)
CONFIGS += C("toyodd_sgo_accum2", TOYODD, {"policy": "size", "min_num_params": 1e5, "sharding_strategy": "SHARD_GRAD_OP", "grad_accum": 2},
             SIM_TOYODD, ["--auto-wrap-policy", "size", "--min-num-params", "1e5", "--sharding-strategy", "SHARD_GRAD_OP", "--grad-accum", "2"], (4,))
CONFIGS += C("llama_transformer", LLAMA, TR, SIM_LLAMA, SIM_TR, W8)
for mnp in ("1e5", "3e5", "1e6"):
    CONFIGS += C("llama_size_%s" % mnp, LLAMA, {"policy": "size", "min_num_params": float(mnp)}, SIM_LLAMA,
                 ["--auto-wrap-policy", "size", "--min-num-params", mnp], W8)
for mnp in ("2.6e5", "5e5"):
    CONFIGS += C("llama_size_%s" % mnp.replace(".", "p"), LLAMA, {"policy": "size", "min_num_params": float(mnp)}, SIM_LLAMA,
                 ["--auto-wrap-policy", "size", "--min-num-params", mnp], (2, 4, 8))
CONFIGS += C("llama_tr_fwdprefetch", LLAMA, dict(TR, forward_prefetch=True), SIM_LLAMA, SIM_TR + ["--forward-prefetch", "true"], W8)
for ss in ("SHARD_GRAD_OP", "NO_SHARD"):
    CONFIGS += C("llama_tr_%s" % ss, LLAMA, dict(TR, sharding_strategy=ss), SIM_LLAMA, SIM_TR + ["--sharding-strategy", ss], W8)
CONFIGS += C("llama_tr_NO_SHARD_mp_bf16", LLAMA, dict(TR, sharding_strategy="NO_SHARD", mp={"param_dtype": "bfloat16", "reduce_dtype": "float32"}),
             SIM_LLAMA, SIM_TR + ["--sharding-strategy", "NO_SHARD", "--param-dtype", "bf16", "--reduce-dtype", "fp32"], (2,))
for ss in ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"):
    for gpn in (4,):   # 2x2 is above
        CONFIGS += [("llama_tr_%s_2x%d" % (ss, gpn), LLAMA, dict(TR, sharding_strategy=ss, gpus_per_node=gpn), SIM_LLAMA,
                     SIM_TR + ["--sharding-strategy", ss, "--nodes", "2", "--gpus-per-node", str(gpn)], 2 * gpn)]
CONFIGS += C("llama_tr_mp_bf16_fp32", LLAMA, dict(TR, mp={"param_dtype": "bfloat16", "reduce_dtype": "float32"}), SIM_LLAMA,
             SIM_TR + ["--param-dtype", "bf16", "--reduce-dtype", "fp32"], W8)
CONFIGS += C("llama_tr_accum3", LLAMA, dict(TR, grad_accum=3), SIM_LLAMA, SIM_TR + ["--grad-accum", "3"], W8)
CONFIGS += C("llama_tr_accum3_nosync", LLAMA, dict(TR, grad_accum=3, no_sync=True), SIM_LLAMA, SIM_TR + ["--grad-accum", "3", "--no-sync", "true"], W8)
CONFIGS += C("llama_tr_sgo_accum3", LLAMA, dict(TR, grad_accum=3, sharding_strategy="SHARD_GRAD_OP"), SIM_LLAMA,
             SIM_TR + ["--grad-accum", "3", "--sharding-strategy", "SHARD_GRAD_OP"], (2, 4))
CONFIGS += C("llama_tr_sgo_accum3_nosync", LLAMA, dict(TR, grad_accum=3, no_sync=True, sharding_strategy="SHARD_GRAD_OP"), SIM_LLAMA,
             SIM_TR + ["--grad-accum", "3", "--no-sync", "true", "--sharding-strategy", "SHARD_GRAD_OP"], W8)
CONFIGS += C("llama_tr_NO_SHARD_accum3_nosync", LLAMA, dict(TR, grad_accum=3, no_sync=True, sharding_strategy="NO_SHARD"), SIM_LLAMA,
             SIM_TR + ["--grad-accum", "3", "--no-sync", "true", "--sharding-strategy", "NO_SHARD"], (2,))
CONFIGS += C("llama_tr_ac_reentrant_outer", LLAMA, dict(TR, ac="reentrant_outer"), SIM_LLAMA, SIM_TR + ["--activation-checkpointing", "reentrant"], W8)

# Mixed precision with accumulation, and the rarer combinations (world 2):
MPBF = {"param_dtype": "bfloat16", "reduce_dtype": "bfloat16"}
MPF = {"param_dtype": "bfloat16", "reduce_dtype": "float32"}
SIM_MPBF = ["--param-dtype", "bf16", "--reduce-dtype", "bf16"]
SIM_MPF = ["--param-dtype", "bf16", "--reduce-dtype", "fp32"]
ACC3 = ["--grad-accum", "3"]
NOSYNC = ["--no-sync", "true"]
W2 = (2,)
CONFIGS += C("llama_tr_mp_bf16_accum3", LLAMA, dict(TR, mp=MPBF, grad_accum=3), SIM_LLAMA, SIM_TR + SIM_MPBF + ACC3, W2)
CONFIGS += C("llama_tr_mp_bf16_fp32_accum3", LLAMA, dict(TR, mp=MPF, grad_accum=3), SIM_LLAMA, SIM_TR + SIM_MPF + ACC3, W2)
CONFIGS += C("llama_tr_mp_bf16_fp32_accum3_nosync", LLAMA, dict(TR, mp=MPF, grad_accum=3, no_sync=True), SIM_LLAMA,
             SIM_TR + SIM_MPF + ACC3 + NOSYNC, W2)
CONFIGS += C("llama_tr_sgo_mp_bf16_fp32_accum3", LLAMA, dict(TR, mp=MPF, grad_accum=3, sharding_strategy="SHARD_GRAD_OP"), SIM_LLAMA,
             SIM_TR + SIM_MPF + ACC3 + ["--sharding-strategy", "SHARD_GRAD_OP"], W2)
CONFIGS += C("llama_tr_origparams_mp_bf16_fp32_accum3", LLAMA, dict(TR, mp=MPF, grad_accum=3, use_orig_params=True), SIM_LLAMA,
             SIM_TR + SIM_MPF + ACC3 + ["--use-orig-params", "true"], W2)
CONFIGS += C("llama_tr_ac_nonreentrant_mp_bf16_fp32", LLAMA, dict(TR, mp=MPF, ac="nonreentrant"), SIM_LLAMA,
             SIM_TR + SIM_MPF + ["--activation-checkpointing", "full"], W2)
CONFIGS += C("llama_tr_NO_SHARD_mp_bf16_accum3_nosync", LLAMA, dict(TR, mp=MPF, grad_accum=3, no_sync=True, sharding_strategy="NO_SHARD"),
             SIM_LLAMA, SIM_TR + SIM_MPF + ACC3 + NOSYNC + ["--sharding-strategy", "NO_SHARD"], W2)
CONFIGS += C("llama_tr_bp_BACKWARD_POST_accum3_nosync", LLAMA, dict(TR, backward_prefetch="BACKWARD_POST", grad_accum=3, no_sync=True),
             SIM_LLAMA, SIM_TR + ["--backward-prefetch", "BACKWARD_POST"] + ACC3 + NOSYNC, W2)
CONFIGS += C("llama_tr_sgo_accum3_nosync_mp_bf16", LLAMA, dict(TR, mp=MPBF, grad_accum=3, no_sync=True, sharding_strategy="SHARD_GRAD_OP"),
             SIM_LLAMA, SIM_TR + SIM_MPBF + ACC3 + NOSYNC + ["--sharding-strategy", "SHARD_GRAD_OP"], W2)
CONFIGS += [("llama_tr_HYBRID_SHARD_2x1_mp_bf16_fp32_accum2", LLAMA,
             dict(TR, mp=MPF, grad_accum=2, sharding_strategy="HYBRID_SHARD", gpus_per_node=1), SIM_LLAMA,
             SIM_TR + SIM_MPF + ["--grad-accum", "2", "--sharding-strategy", "HYBRID_SHARD", "--nodes", "2", "--gpus-per-node", "1"], 2)]
for mp, tag, sim_mp in ((None, "", []), (MPF, "_bf16", SIM_MPF)):
    extra = {"policy": "none", "use_orig_params": True, "sharding_strategy": "NO_SHARD"}
    if mp:
        extra["mp"] = mp
    CONFIGS += C("toyodd_NO_SHARD_orig1" + tag, TOYODD, extra, SIM_TOYODD,
                 ["--auto-wrap-policy", "none", "--use-orig-params", "true", "--sharding-strategy", "NO_SHARD"] + sim_mp, W2)
CONFIGS += C("llama_tr_limitag0_fwdprefetch_bppost_origparams", LLAMA,
             dict(TR, limit_all_gathers=False, forward_prefetch=True, backward_prefetch="BACKWARD_POST", use_orig_params=True), SIM_LLAMA,
             SIM_TR + ["--limit-all-gathers", "false", "--forward-prefetch", "true", "--backward-prefetch", "BACKWARD_POST",
                       "--use-orig-params", "true"], W2)
CONFIGS += C("llama_size_3e5_mp_bf16_fp32_accum2_nosync", LLAMA, {"policy": "size", "min_num_params": 3e5, "mp": MPF, "grad_accum": 2,
             "no_sync": True}, SIM_LLAMA, ["--auto-wrap-policy", "size", "--min-num-params", "3e5"] + SIM_MPF + ["--grad-accum", "2"] + NOSYNC, W2)
CONFIGS += C("llama_tr_origparams_NO_SHARD_mp_bf16_fp32", LLAMA, dict(TR, use_orig_params=True, sharding_strategy="NO_SHARD", mp=MPF),
             SIM_LLAMA, SIM_TR + ["--use-orig-params", "true", "--sharding-strategy", "NO_SHARD"] + SIM_MPF, W2)
CONFIGS += C("llama_tr_sgo_origparams_accum3", LLAMA, dict(TR, use_orig_params=True, sharding_strategy="SHARD_GRAD_OP", grad_accum=3),
             SIM_LLAMA, SIM_TR + ["--use-orig-params", "true", "--sharding-strategy", "SHARD_GRAD_OP"] + ACC3, W2)
for ac, sim_ac in (("reentrant_outer", "reentrant"), ("reentrant", "full")):
    CONFIGS += C("llama_tr_ac_%s_mp_bf16_fp32_accum2" % ("reentrant_outer" if ac == "reentrant_outer" else "reentrant_inside"), LLAMA,
                 dict(TR, mp=MPF, ac=ac, grad_accum=2), SIM_LLAMA,
                 SIM_TR + SIM_MPF + ["--activation-checkpointing", sim_ac, "--grad-accum", "2"], W2)


def run(cmd, out=None):
    with open(OUT + "/commands.txt", "a") as f:
        f.write(" ".join(cmd) + ((" > " + out) if out else "") + "\n")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if out:
        with open(out, "w") as f:
            f.write(r.stdout)
    return r


def main():
    only = None
    force = "--force" in sys.argv
    if "--only" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1]
    exact = None
    if "--names" in sys.argv:   # a file with one record name a line
        exact = set(open(sys.argv[sys.argv.index("--names") + 1]).read().split())
    os.makedirs(OUT + "/data", exist_ok=True)
    os.makedirs(OUT + "/diffs", exist_ok=True)
    rows = []
    for name, base, extra, sim_base, sim_extra, world in CONFIGS:
        full = "%s_w%d" % (name, world)
        if only and only not in full:
            continue
        if exact is not None and full not in exact:
            continue
        cfg = dict(base)
        cfg.update(extra)
        cfg["warmup"], cfg["steps"] = WARMUP, STEPS
        backend = "gloo" if world <= 2 else "fake"
        tj = "%s/data/%s.torch.json" % (OUT, full)
        if force or not os.path.exists(tj):
            r = run(["nice", "-n", "10", PY, ROOT + "/oracle.py", "--config", json.dumps(cfg), "--world", str(world),
                     "--backend", backend, "--out", tj])
            if r.returncode != 0:
                print("TORCH FAILED", full, r.stderr[-3000:])
                with open("%s/data/%s.torch.err" % (OUT, full), "w") as f:
                    f.write(r.stderr)
                rows.append((full, world, backend, "FAIL", "-", "-", "-", "-"))
                continue
        sim = [SIM, "schedule"] + sim_base + ["--topology", "test-2x4", "--iterations", str(ITERS), "--format", "json"]
        if "--nodes" not in sim_extra:
            sim += ["--nodes", "1", "--gpus-per-node", str(world)]
        sim += sim_extra
        sj = "%s/data/%s.fsdpsim.json" % (OUT, full)
        r = run(sim, sj)
        if r.returncode != 0:
            print("FSDPSIM FAILED", full, r.stderr)
            with open("%s/data/%s.fsdpsim.err" % (OUT, full), "w") as f:
                f.write(r.stderr)
            rows.append((full, world, backend, "-", "FAIL", "-", "-", "-"))
            continue
        r = subprocess.run(["python3", ROOT + "/compare.py", tj, sj], capture_output=True, text=True)
        with open("%s/diffs/%s.txt" % (OUT, full), "w") as f:
            f.write(r.stdout + r.stderr)
        t = json.load(open(tj))
        s = json.load(open(sj))
        v = {l.split()[0]: l.split()[1] for l in r.stdout.splitlines() if l.split() and l.split()[0] in ("UNITS", "COLLECTIVES", "ORDER+MARKERS")}
        rows.append((full, world, backend, len(t["units"]), s["n_units"], v.get("UNITS"), v.get("COLLECTIVES"), v.get("ORDER+MARKERS")))
        print("\t".join(map(str, rows[-1])), flush=True)
    mode = "w" if not only else "a"
    with open(OUT + "/summary.tsv", mode) as f:
        if mode == "w":
            f.write("config\tworld\tbackend\ttorch_units\tfsdpsim_units\tunits\tcollectives\torder+markers\n")
        for row in rows:
            f.write("\t".join(map(str, row)) + "\n")


if __name__ == "__main__":
    main()
