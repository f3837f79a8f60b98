#!/bin/sh
# run.sh: print each published claim in reports/scenarios/*.ini next to
# what fsdpsim predicts for the same setting (make scenarios).
#
# usage: run.sh FSDPSIM SRCDIR
#
# A scenario is a run file (simulate's keys, see README "Run files") with
# lines starting "#@ " that say what to compare:
#   #@ title:  one line naming the setting
#   #@ source: URL and section the claim is quoted from
#   #@ quote:  the claim's words, as published (or why none is quoted)
#   #@ claim:  the number claimed, in the unit below ("-" for none)
#   #@ metric: the key of 'simulate --format json' to compare
#   #@ unit:   how to show it: tokens/s/GPU, TFLOPS, ms, s, GiB, %, x
#   #@ vs:     flags of a second run to set beside the first (optional);
#              the ratio first/second is printed too
#   #@ ratio:  the claim about that ratio, in words (optional)
#   #@ note:   anything the modelling simplifies (optional, repeatable)
# Nothing here is fitted: the claims are printed, never used as inputs.
set -u
FSDPSIM=$1
SRCDIR=$2
status=0

meta() {
    sed -n "s/^#@ $1: *//p" "$2"
}

# The metric's value from the JSON summary, scaled to the unit.
value() {
    json=$1 metric=$2 unit=$3
    v=$(printf '%s\n' "$json" | sed -n "s/^ *\"$metric\": *\\([^,]*\\),*\$/\\1/p")
    case $v in
    true) echo "yes"; return ;;
    false) echo "no"; return ;;
    "") echo "?"; return ;;
    esac
    case $unit in
    GiB) awk -v v="$v" 'BEGIN { printf "%.1f", v / 1073741824 }' ;;
    ms) awk -v v="$v" 'BEGIN { printf "%.1f", v * 1000 }' ;;
    %) awk -v v="$v" 'BEGIN { printf "%.1f", v * 100 }' ;;
    *) awk -v v="$v" 'BEGIN { printf (v >= 1000 || v <= -1000) ? "%.0f" : "%.4g", v }' ;;
    esac
}

run() {
    # shellcheck disable=SC2086
    out=$("$FSDPSIM" simulate --config "$1" --format json $2 2>&1)
    if [ $? -ne 0 ]; then
        echo "error: $(printf '%s' "$out" | head -1)"
        return 1
    fi
    printf '%s\n' "$out"
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a + 0 == a && b + 0 == b && b != 0) printf "%.2f", a / b
        else printf "-" }'
}

n=0
for f in "$SRCDIR"/reports/scenarios/*.ini; do
    n=$((n + 1))
    id=$(basename "$f" .ini)
    metric=$(meta metric "$f")
    unit=$(meta unit "$f")
    claim=$(meta claim "$f")
    vs=$(meta vs "$f")
    echo "== $id: $(meta title "$f")"
    meta source "$f" | sed "s/^/   source:    /"
    meta quote "$f" | sed 's/^/   quote:     /'
    if json=$(run "$f" ""); then
        p=$(value "$json" "$metric" "$unit")
    else
        p=$json
        status=1
    fi
    line="   predicted: $p $unit ($metric)"
    if [ -n "$vs" ]; then
        if json2=$(run "$f" "$vs"); then
            p2=$(value "$json2" "$metric" "$unit")
            line="$line; with $vs: $p2 $unit; ratio $(ratio "$p" "$p2")"
        else
            line="$line; with $vs: $json2"
        fi
    fi
    rclaim=$(meta ratio "$f")
    [ -n "$rclaim" ] && echo "   claimed:   $rclaim (first run over the second)"
    if [ "$claim" != "-" ]; then
        echo "   claimed:   $claim $unit"
        echo "$line; predicted/claimed $(ratio "$p" "$claim")"
    else
        echo "$line"
    fi
    meta note "$f" | sed 's/^/   note:      /'
    echo
done
echo "$n scenarios"
exit $status
