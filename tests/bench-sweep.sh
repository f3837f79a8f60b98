#!/bin/sh
# bench-sweep.sh: how fast `fsdpsim sweep` runs, on two 10,000-point grids
# of GPT-3 175B (bf16) on 128 dgx-a100-80g nodes = 1024 GPUs, one worker
# per online CPU:
#   one micro-batch per step: micro_batch 10 x seq_len 5 x sharding 5 x
#     limit_all_gathers 2 x forward_prefetch 2 x activation_checkpointing
#     2 x overlap.comm_slowdown 5 (1.0 to 1.4) = 10,000
#   accumulation 1..10: grad_accum 10 x micro_batch 10 x seq_len 5 x
#     sharding 5 x limit_all_gathers 2 x backward_prefetch 2 = 10,000
#   accumulation 1..100: grad_accum 100 x micro_batch 100 = 10,000
# Each prints its wall time.  A longer step than 10 micro-batches is
# counted from one of 9 or 10 when the engine proves its micro-batches
# repeat (sim/net/steady.h), and the points that differ only in grad_accum
# share that short step.  GPT-3 here does not fit, and at some
# micro-batch sizes its steps repeat only later or every 4 to 20
# micro-batches: those settings share a probe of 24 or 64 micro-batches
# and a few steps of A's phase instead.  The third grid simulates its
# 1,000 points of up to 10 micro-batches whole, and the 9,000 others
# mostly from those.
#
# usage: tests/bench-sweep.sh FSDPSIM
set -eu
fsdpsim=$1
out=${TMPDIR:-/tmp}/fsdpsim-bench-sweep.$$.csv
trap 'rm -f "$out"' EXIT INT TERM
base="--model gpt3-175b --topology dgx-a100-80g --nodes 128 --param-dtype bf16"
shard="sharding_strategy=FULL_SHARD,SHARD_GRAD_OP,HYBRID_SHARD,_HYBRID_SHARD_ZERO2,NO_SHARD"

now() { date +%s.%N; }

run() {
    name=$1
    shift
    t0=$(now)
    # shellcheck disable=SC2086
    "$fsdpsim" sweep $base "$@" --out "$out"
    t1=$(now)
    rows=$(($(wc -l <"$out") - 1))
    awk -v n="$name" -v r="$rows" -v a="$t0" -v b="$t1" 'BEGIN {
        printf "%-28s %6d points in %6.2f s (%.2f ms per point)\n",
               n, r, b - a, (b - a) * 1000 / r }'
}

run "one micro-batch per step" --vary micro_batch=1:10:+1 \
    --vary seq_len=1024,2048,3072,4096,8192 --vary "$shard" \
    --vary limit_all_gathers=true,false --vary forward_prefetch=false,true \
    --vary activation_checkpointing=none,full \
    --vary set=overlap.comm_slowdown=1,1.1,1.2,1.3,1.4
run "accumulation 1..10" --vary grad_accum=1:10:+1 \
    --vary micro_batch=1:10:+1 --vary seq_len=1024,2048,3072,4096,8192 \
    --vary "$shard" --vary limit_all_gathers=true,false \
    --vary backward_prefetch=BACKWARD_PRE,BACKWARD_POST
run "accumulation 1..100" --vary grad_accum=1:100:+1 \
    --vary micro_batch=1:100:+1
