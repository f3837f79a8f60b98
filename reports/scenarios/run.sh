#!/bin/sh
# run.sh: print each published claim in reports/scenarios/*.ini next to
# what fsdpsim predicts for the same setting (make scenarios).
#
# usage: run.sh FSDPSIM SRCDIR [REPORT.html]
#   REPORT.html: also write the seed claims' table as one HTML page
#
# A scenario is a run file (simulate's keys, see doc/inputs.md "Run files") with
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
#   #@ claim-id: the claim of the seed articles it tests
#              (/work/shared/docs/seed-claims.md: A1-A20, B1-B10; optional)
#   #@ vs-metric: the second run's metric, when not the first's (optional)
#   #@ check:  how the verdict is reached, on the "value" of the first run
#              or the "ratio" first/second:  ~X tol P%  (within P% of X),
#              A..B (in that range), >X, <X, =WORD (a yes/no field), or
#              "none: WHY" (not checkable).  Without one, a numeric claim is
#              checked as "value ~CLAIM tol 25%".
# A metric may be KEY/KEY (a share, e.g. reducescatter_s/step_time_s) or
# KEY+KEY+... (a sum, e.g. memory categories).  Claims the seed articles
# make that no simulation can set a number beside are judged in
# claims-judged.txt ("ID: verdict and why").  The run ends with every seed
# claim's verdict; one with none fails it.
# Nothing here is fitted: the claims are printed, never used as inputs.
set -u
FSDPSIM=$1
SRCDIR=$2
REPORT=${3:-}
status=0
verdicts=$(mktemp)
trap 'rm -f "$verdicts"' EXIT

meta() {
    sed -n "s/^#@ $1: *//p" "$2"
}

# One key's raw value in the JSON summary (nested keys too: the memory
# breakdown's categories).
key() {
    printf '%s\n' "$1" | sed -n "s/^ *\"$2\": *\\([^,]*\\),*\$/\\1/p" | head -1
}

# The metric's raw value: a key, KEY/KEY or KEY+KEY+...
raw() {
    json=$1 metric=$2
    case $metric in
    */*)
        a=$(key "$json" "${metric%%/*}") b=$(key "$json" "${metric#*/}")
        awk -v a="$a" -v b="$b" 'BEGIN {
            if (a + 0 == a && b + 0 == b && b != 0) printf "%.17g", a / b
            else printf "" }' ;;
    *+*)
        sum=0
        for k in $(printf '%s' "$metric" | tr '+' ' '); do
            v=$(key "$json" "$k")
            sum=$(awk -v s="$sum" -v v="$v" 'BEGIN { printf "%.17g", s + v }')
        done
        echo "$sum" ;;
    *) key "$json" "$metric" ;;
    esac
}

# The metric's value from the JSON summary, scaled to the unit.
value() {
    json=$1 metric=$2 unit=$3
    v=$(raw "$json" "$metric")
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

# The verdict on X (a number, or yes/no) by the check SPEC: "consistent:
# ..." or "inconsistent: ... by N%".
verdict() {
    awk -v x="$1" -v spec="$2" -v what="$3" '
    function f(v) { return sprintf((v >= 1000 || v <= -1000) ? "%.0f" : "%.3g", v) }
    BEGIN {
        if (spec ~ /^=/) {
            w = substr(spec, 2)
            if (x == w) printf "consistent: %s is %s", what, x
            else printf "inconsistent: %s is %s, not %s", what, x, w
            exit
        }
        if (x + 0 != x) { printf "not checkable: no prediction (%s)", x; exit }
        if (spec ~ /^~/) {
            split(substr(spec, 2), p, " tol ")
            want = p[1] + 0; tol = p[2] + 0
            d = 100 * (x / want - 1)
            if (d <= tol && d >= -tol)
                printf "consistent: %s %s is within %g%% of %g (%+.0f%%)", \
                       what, f(x), tol, want, d
            else
                printf "inconsistent: %s %s is %+.0f%% off %g (tolerance %g%%)", \
                       what, f(x), d, want, tol
        } else if (spec ~ /\.\./) {
            split(spec, r, /\.\./)
            lo = r[1] + 0; hi = r[2] + 0
            if (x >= lo && x <= hi)
                printf "consistent: %s %s lies in %g..%g", what, f(x), lo, hi
            else if (x < lo)
                printf "inconsistent: %s %s is %.0f%% below %g..%g", \
                       what, f(x), 100 * (1 - x / lo), lo, hi
            else
                printf "inconsistent: %s %s is %.0f%% above %g..%g", \
                       what, f(x), 100 * (x / hi - 1), lo, hi
        } else if (spec ~ /^[<>]/) {
            op = substr(spec, 1, 1); want = substr(spec, 2) + 0
            ok = op == ">" ? x > want : x < want
            if (ok) printf "consistent: %s %s %s %g", what, f(x), op, want
            else printf "inconsistent: %s %s is not %s %g (%+.0f%%)", \
                        what, f(x), op, want, 100 * (x / want - 1)
        } else
            printf "not checkable: unknown check \"%s\"", spec
    }'
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
    cid=$(meta claim-id "$f")
    [ -n "$cid" ] && echo "   claim:     $cid of the seed articles"
    vmetric=$(meta vs-metric "$f")
    [ -n "$vmetric" ] || vmetric=$metric
    x1="" x2=""
    if json=$(run "$f" ""); then
        p=$(value "$json" "$metric" "$unit")
        x1=$(raw "$json" "$metric")
    else
        p=$json
        status=1
    fi
    line="   predicted: $p $unit ($metric)"
    if [ -n "$vs" ]; then
        if json2=$(run "$f" "$vs"); then
            p2=$(value "$json2" "$vmetric" "$unit")
            x2=$(raw "$json2" "$vmetric")
            line="$line; with $vs: $p2 $unit ($vmetric); ratio $(ratio "$x1" "$x2")"
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
    check=$(meta check "$f")
    [ -z "$check" ] && [ "$claim" != "-" ] && check="value ~$claim tol 25%"
    case $check in
    "") v="" ;;
    none:*) v="not checkable:${check#none:}" ;;
    value\ *) v=$(verdict "$p" "${check#value }" "$metric") ;;
    ratio\ *)
        r=$(awk -v a="$x1" -v b="$x2" 'BEGIN {
            if (a + 0 == a && b + 0 == b && b != 0) printf "%.6g", a / b
            else printf "?" }')
        v=$(verdict "$r" "${check#ratio }" "the ratio") ;;
    *) v="not checkable: unknown check \"$check\"" ;;
    esac
    if [ -n "$v" ]; then
        echo "   verdict:   $v"
        [ -n "$cid" ] && printf '%s\t%s\t%s\n' "$cid" "$id" "$v" >>"$verdicts"
    fi
    echo
done
echo "$n scenarios"

# Every claim of the seed articles, with its verdicts: from the scenarios
# above, or judged without a simulation in claims-judged.txt.
judged=$SRCDIR/reports/scenarios/claims-judged.txt
echo
echo "== the seed articles' claims (shared/docs/seed-claims.md)"
missing=0
for c in $(seq 1 20 | sed 's/^/A/') $(seq 1 10 | sed 's/^/B/'); do
    found=0
    while IFS="$(printf '\t')" read -r vid vscen vtext; do
        [ "$vid" = "$c" ] || continue
        printf '   %-4s %-28s %s\n' "$c" "$vscen" "$vtext"
        found=1
    done <"$verdicts"
    if [ -f "$judged" ]; then
        t=$(sed -n "s/^$c: *//p" "$judged")
        if [ -n "$t" ]; then
            printf '   %-4s %-28s %s\n' "$c" "(no scenario)" "$t"
            found=1
        fi
    fi
    if [ $found = 0 ]; then
        printf '   %-4s %-28s %s\n' "$c" "-" "no verdict"
        missing=$((missing + 1))
    fi
done
if [ $missing -gt 0 ]; then
    echo "$missing claims without a verdict"
    status=1
fi

# The same table as an HTML page: claim, scenario, verdict, the verdict's
# first word coloured; the text wraps, so the page fits a 1280-pixel
# window.
# A word holding a hyphen (an option, a scenario's name) goes into a
# span that stays on one line while it fits: browsers would otherwise
# break "--param-dtype" after its "--".
html_escape() {
    sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g' |
        sed -E 's/[^ ]*[^ ]-[^ ]*|[^ ]*-[^ ]*[^ ]/<span class="w">&<\/span>/g'
}
if [ -n "$REPORT" ]; then
    tmp=$REPORT.tmp.$$
    {
        echo '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"/>'
        echo '<title>fsdpsim: the seed articles'"'"' claims</title><style>'
        echo 'body{font-family:sans-serif;max-width:1200px;margin:1em auto}'
        echo 'table{border-collapse:collapse;width:100%;table-layout:fixed}'
        echo 'td,th{border:1px solid #ccc;padding:4px;vertical-align:top;'
        echo 'overflow-wrap:anywhere;text-align:left}'
        echo 'col.id{width:4em}col.sc{width:16em}'
        echo 'span.w{display:inline-block;max-width:100%}'
        echo '.consistent{color:#060}.inconsistent{color:#a00}'
        echo '.not{color:#666}</style></head><body>'
        echo '<h1>The seed articles'"'"' claims, judged by fsdpsim</h1>'
        echo '<p>Claims restated in shared/docs/seed-claims.md; each'
        echo 'verdict from the scenario named (reports/scenarios/) or from'
        echo 'claims-judged.txt. Nothing is fitted to the claims.</p>'
        echo '<table><colgroup><col class="id"/><col class="sc"/><col/>'
        echo '</colgroup><tr><th>claim</th><th>scenario</th><th>verdict</th></tr>'
        for c in $(seq 1 20 | sed 's/^/A/') $(seq 1 10 | sed 's/^/B/'); do
            {
                awk -F '\t' -v c="$c" '$1 == c { print $2 "\t" $3 }' "$verdicts"
                [ -f "$judged" ] && sed -n "s/^$c: *//p" "$judged" |
                    sed 's/^/(no scenario)\t/'
            } | while IFS="$(printf '\t')" read -r sc text; do
                word=${text%%:*}
                cls=$(printf '%s' "$word" | cut -d' ' -f1)
                printf '<tr><td>%s</td><td>%s</td><td class="%s">%s</td></tr>\n' \
                    "$c" "$(printf '%s' "$sc" | html_escape)" "$cls" \
                    "$(printf '%s' "$text" | html_escape)"
            done
        done
        echo '</table></body></html>'
    } >"$tmp" && mv "$tmp" "$REPORT" || { rm -f "$tmp"; status=3; }
    echo "wrote $REPORT"
fi
exit $status
