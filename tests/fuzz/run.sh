#!/bin/sh
# run.sh SRCDIR BUILDDIR SECONDS: build every libFuzzer harness of
# tests/fuzz/ with clang (AddressSanitizer + UndefinedBehaviorSanitizer)
# and run each for SECONDS from its seed corpus: the repository's models,
# topologies and test data, plus tests/fuzz/corpus/NAME/ (where every
# input that ever crashed a harness is kept as a regression input).
# Exits non-zero when any harness finds a crash, a leak or a hang; the
# input is then in BUILDDIR/fuzz/crashes/.
set -eu
srcdir=$(cd "$1" && pwd)
builddir=$(cd "$2" && pwd)
seconds=${3:-60}
CC=${FUZZ_CC:-clang}
out=$builddir/fuzz
mkdir -p "$out/obj" "$out/crashes"
flags="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -std=c11 -D_DEFAULT_SOURCE -include $builddir/config.h $(for l in core net io plan cli; do printf -- "-iquote %s/sim/%s " "$srcdir" "$l"; done) -iquote $builddir/sim/core $(pkg-config --cflags jansson inih gsl)"
libs="$(pkg-config --libs jansson inih gsl) -lm"
# The SimGrid backend is a plugin (net_simgrid.c, loaded by
# net_simgrid_load.c on first use), not part of the library: no harness
# loads it, so only its headers are needed.
if grep -q '^#define HAVE_SIMGRID 1' "$builddir/config.h"; then
    flags="$flags $(pkg-config --cflags simgrid)"
fi

# The library, instrumented for coverage.
objs=
for src in $(ls "$srcdir"/sim/*/*.c "$builddir"/sim/core/builtin_data.c | sort -u); do
    base=$(basename "$src" .c)
    case $src in "$srcdir"/sim/core/builtin_data.c) [ "$srcdir" = "$builddir" ] || continue ;; esac
    case $base in main|cmd_*|net_simgrid) continue ;; esac
    obj=$out/obj/$base.o
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ]; then
        $CC $flags -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    objs="$objs $obj"
done

status=0
for h in "$srcdir"/tests/fuzz/fuzz_*.c; do
    name=$(basename "$h" .c)
    $CC $flags -fsanitize=fuzzer "$h" $objs $libs -o "$out/$name"
    corpus=$out/corpus-$name
    mkdir -p "$corpus"
    seeds=
    case $name in
        fuzz_model_ini) seeds="$srcdir/models/*.ini $srcdir/tests/data/*.ini" ;;
        fuzz_hf_config) seeds="$srcdir/models/*.json $srcdir/tests/data/*.json" ;;
        fuzz_topology) seeds="$srcdir/topologies/*.ini $srcdir/tests/data/*topology*.ini" ;;
        fuzz_runfile|fuzz_runfile_sections) seeds="$srcdir/tests/data/*run*.ini" ;;
        fuzz_nccl_tests) seeds="$srcdir/tests/data/nccl-tests-* $srcdir/tests/data/published-*.csv" ;;
        fuzz_platform) seeds="$srcdir/tests/data/*platform*.xml" ;;
        *) seeds= ;;
    esac
    for f in $seeds; do [ -f "$f" ] && cp "$f" "$corpus/"; done
    if [ -d "$srcdir/tests/fuzz/corpus/$name" ]; then
        cp "$srcdir/tests/fuzz/corpus/$name"/* "$corpus/" 2>/dev/null || true
    fi
    echo "== $name: ${seconds}s"
    if ! "$out/$name" -max_total_time="$seconds" -timeout=10 \
            -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
            -artifact_prefix="$out/crashes/$name-" "$corpus" \
            >"$out/$name.log" 2>&1; then
        echo "FAIL $name: see $out/$name.log"
        tail -30 "$out/$name.log"
        status=1
    else
        grep -E "stat::number_of_executed_units|cov:" "$out/$name.log" | tail -2
    fi
done
exit $status
