#!/usr/bin/env python3
"""Print the records.list line (NAME fsdpsim-arguments) of each record name
given on stdin, from run_all.py's configurations."""
import os
import sys

sys.argv = sys.argv[:1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_all as R  # noqa: E402

by_name = {}
for name, base, extra, sim_base, sim_extra, world in R.CONFIGS:
    sim = list(sim_base) + ["--topology", "test-2x4", "--iterations", str(R.ITERS)]
    if "--nodes" not in sim_extra:
        sim += ["--nodes", "1", "--gpus-per-node", str(world)]
    sim += sim_extra
    line = " ".join(sim).replace(os.path.join(os.path.dirname(R.ROOT), "data", "oracle"),
                                 "@SRCDIR@/tests/data/oracle")
    line = line.replace("--auto-wrap-policy size --min-num-params 1e15", "--auto-wrap-policy none")
    by_name["%s_w%d" % (name, world)] = line
for n in sys.stdin.read().split():
    print(n, by_name[n])
