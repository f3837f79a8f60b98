#!/bin/sh
# valgrind.sh BUILDDIR SRCDIR: a smoke subset under valgrind memcheck.
# Each command must finish with no memory error and no leak (definite,
# indirect or possible).  Check suites run with CK_FORK=no so valgrind
# follows every test in one process.
set -u
builddir=$1
srcdir=$2
vg="valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99"
fail=0
pass=0
run() {
    expect=$1
    shift
    $vg "$@" >/dev/null 2>"$tmp/valgrind.err"
    rc=$?
    if [ $rc = 99 ] || [ $rc != "$expect" ]; then
        echo "FAIL (exit $rc, expected $expect): $*"
        cat "$tmp/valgrind.err"
        fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
}
f=$builddir/fsdpsim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run 0 "$f" simulate --model tiny-llama --topology test-2x4 --param-dtype bf16 \
    --trace "$tmp/t.json" --timeline "$tmp/t.dat" --memory "$tmp/m.dat"
run 0 "$f" simulate --model tiny-llama --topology test-2x4 --format json \
    --sharding-strategy HYBRID_SHARD --activation-checkpointing reentrant \
    --grad-accum 2 --no-sync --cpu-offload
run 0 "$f" simulate --model toy --topology dgx-a100-80g --gpus-per-node 2 \
    --auto-wrap-policy size --min-num-params 1e6 --use-orig-params
run 0 "$f" simulate --model llama2-7b --topology dgx-a100-80g
# Enough micro-batches for the engine to fold repeated ones.
run 0 "$f" simulate --model tiny-llama --topology test-2x4 --grad-accum 11 \
    --no-sync false --memory "$tmp/m11.dat"
run 0 "$f" schedule --model tiny-llama --topology test-2x4 --format json
run 0 "$f" coll allreduce -t dgx-h100 -b 8 -e 8G -f 8
run 0 "$f" calibrate --nccl-tests "$srcdir/tests/data/nccl-tests-allreduce-8x1.txt" \
    "$srcdir/tests/data/nccl-tests-allreduce-8x2.json" --out "$tmp/cal.ini"
run 0 "$f" simulate --model tiny-llama --topology "$tmp/cal.ini"
run 2 "$f" simulate --nccl-algo Tree
run 0 "$f" models --show t5-11b
run 0 "$f" models
run 0 "$f" topologies --show dgx-h100
run 2 "$f" simulate --model "$srcdir/tests/data/bad-model.ini"
run 2 "$f" simulate --model "$srcdir/tests/data/bad-config.json"
run 2 "$f" simulate --topology "$srcdir/tests/data/bad-topology.ini"
run 2 "$f" simulate --config "$srcdir/tests/data/bad-run.ini"
run 2 "$f" simulate --set intra.bandwidth=300
run 0 "$f" tune --model toy --topology test-2x4 --auto-wrap-policy size \
    --max-grad-accum 2 --jobs 2 --report "$tmp/tune.html"
run 0 "$f" plan --model tiny-llama --tokens 1B --deadline 1h --gpu test-2x4 \
    --max-nodes 4 --jobs 2 --report "$tmp/plan.html"
for t in check_units check_wrap check_coll check_sched check_engine check_mem check_model check_topo check_calibrate check_search; do
    CK_FORK=no run 0 "$builddir/tests/$t"
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
