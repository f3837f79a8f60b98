#!/bin/sh
# gpu-check.sh: the real-mode checks, for a machine with NVIDIA GPUs.
#
# Builds fsdpsim with CUDA, runs `fsdpsim real bench` (nccl-tests-style
# sweeps with data checks, GEMM and copy sweeps), `fsdpsim real run` of
# tiny-llama on every local GPU in three configurations, the matching
# `fsdpsim simulate`, `fsdpsim compare` of the two timelines and
# `fsdpsim calibrate` on the bench output, and ends with a table of
# predicted against measured step time.  Exit 0 when everything ran (the
# errors are reported, not judged), 1 when a step failed, 77 (automake's
# SKIP) without a GPU or without real mode.  Meant to take a few minutes on
# an 8-GPU node, most of it the build (not yet timed on one).
#
# usage: real/gpu-check.sh [OUTDIR]      (default /tmp/fsdpsim-gpu-check)

set -u
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/fsdpsim-gpu-check}
mkdir -p "$out" || exit 1
cd "$top" || exit 1

say() { printf '%s\n' "gpu-check: $*" >&2; }

if ! command -v nvidia-smi >/dev/null 2>&1 \
   || ! nvidia-smi -L >"$out/gpus.txt" 2>&1; then
    say "no GPU (nvidia-smi missing or failing): skipped"
    exit 77
fi
gpus=$(grep -c '^GPU ' "$out/gpus.txt")
if [ "$gpus" -lt 1 ]; then
    say "nvidia-smi lists no GPU: skipped"
    exit 77
fi
say "$gpus GPU(s): $(sed -n 1p "$out/gpus.txt")"

# ---- build ----
if [ ! -x configure ]; then
    autoreconf -fi >"$out/autoreconf.log" 2>&1 \
        || { say "autoreconf failed, see $out/autoreconf.log"; exit 1; }
fi
if ! ./configure >"$out/configure.log" 2>&1; then
    say "configure failed, see $out/configure.log"
    exit 1
fi
if ! grep -q '^#define HAVE_CUDA 1' config.h; then
    say "configure did not find CUDA, cuBLAS, NCCL and nvcc: real mode" \
        "not built (see $out/configure.log): skipped"
    exit 77
fi
if ! make -j"$(nproc 2>/dev/null || echo 4)" >"$out/make.log" 2>&1; then
    say "make failed, see $out/make.log"
    tail -20 "$out/make.log" >&2
    exit 1
fi

fail=0
run() {     # run NAME CMD...: log to $out/NAME.log, note failures
    name=$1
    shift
    say "$name: $*"
    "$@" >"$out/$name.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        say "$name FAILED (exit $rc), last lines of $out/$name.log:"
        tail -15 "$out/$name.log" >&2
        fail=1
    fi
    return $rc
}

# ---- collectives, GEMMs, copies ----
nt=$out/nt.txt
# The GEMM sweep at a 7B model's training shapes: large enough to draw the
# GPU's full power, so that its SM clock line shows the power-limited clock.
if run bench ./fsdpsim real bench --nccl-tests-out "$nt" -b 1K -e 256M -f 4 \
       --iters 10 --warmup 3 --model llama2-7b --seq-len 4096 \
       --param-dtype bf16; then
    cat "$out/bench.log"
    # One nccl-tests run per file, as `fsdpsim calibrate` reads them.
    rm -f "$out"/nt-*.txt
    awk -v d="$out" '/^# Collective test starting:/ {
            f = d "/nt-" $NF ".txt" } f != "" { print > f }' "$nt"
    run calibrate ./fsdpsim calibrate --topology hgx-h200 \
        -o "$out/calibrated.ini" --nccl-tests "$out"/nt-*.txt \
        && tail -12 "$out/calibrate.log"
fi

# ---- the schedule on GPUs against the simulator ----
base="--model tiny-llama --topology hgx-h200 --nodes 1 --gpus-per-node $gpus"
configs="fp32:
bf16-ac:--param-dtype bf16 --activation-checkpointing full
bf16-offload:--param-dtype bf16 --cpu-offload"
table=$out/table.txt
printf '%-14s %14s %14s %9s\n' config "predicted ms" "measured ms" error \
    >"$table"
echo "$configs" | while IFS=: read -r name extra; do
    # shellcheck disable=SC2086
    ./fsdpsim real run $base $extra --dry-run >"$out/dry-$name.txt" 2>&1
    # shellcheck disable=SC2086
    ./fsdpsim schedule $base $extra >"$out/sched-$name.txt" 2>&1
    if ! cmp -s "$out/dry-$name.txt" "$out/sched-$name.txt"; then
        say "$name: 'real run --dry-run' differs from 'schedule'"
        echo "dry-run mismatch" >"$out/failed-$name"
    fi
    # shellcheck disable=SC2086
    run "real-$name" ./fsdpsim real run $base $extra --warmup 1 \
        --timeout 60 --timeline "$out/m-$name.dat" \
        || { echo "real run failed" >"$out/failed-$name"; continue; }
    # shellcheck disable=SC2086
    run "sim-$name" ./fsdpsim simulate $base $extra \
        --timeline "$out/p-$name.dat" \
        || { echo "simulate failed" >"$out/failed-$name"; continue; }
    run "compare-$name" ./fsdpsim compare "$out/p-$name.dat" \
        "$out/m-$name.dat" || echo "compare failed" >"$out/failed-$name"
    awk -v n="$name" '/^step time/ {
            printf "%-14s %14.3f %14.3f %8s\n", n, $4 * 1e3, $5 * 1e3, $6 }' \
        "$out/real-$name.log" >>"$table"
done
if ls "$out"/failed-* >/dev/null 2>&1; then
    fail=1
    rm -f "$out"/failed-*
fi

echo
echo "predicted vs measured step time, tiny-llama on $gpus GPU(s)" \
     "(error = predicted / measured - 1)"
cat "$table"
grep -h "SM clock while" "$out/bench.log" "$out"/real-*.log 2>/dev/null
echo "logs, timelines and the calibrated topology are in $out"
exit $fail
