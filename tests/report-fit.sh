#!/bin/sh
# report-fit.sh: every kind of HTML report fits a 1280-pixel window, as a
# headless browser lays it out.
#
# usage: sh tests/report-fit.sh [SHOTS_DIR]   (from the build directory;
#        FSDPSIM and SRCDIR as for make check; FIT_WIDTH=1024 tries
#        another window width, 1280 by default)
#
# Writes each page fsdpsim makes (simulate --report, report --html, sweep,
# tune and plan --report, plan with --network simgrid when SimGrid is
# built in, and make scenarios' scenarios.html), on the documentation's
# examples (doc/commands.md), then loads each in headless Chromium 1280
# pixels wide with a small script appended that measures the laid-out
# page: it fails when the page is wider than the window or an element
# reaches past the window's right edge outside a box that scrolls.  Boxes
# that do scroll (a table too wide for the page scrolls in its own box)
# are listed, not failed.  With SHOTS_DIR, a full-height screenshot of
# each page goes there (NAME.png) to look at.  Exits 77 (skip) without
# chromium or gnuplot; not part of make check (a browser is no build
# dependency), tests/report.test checks the rules that keep the pages in
# the window without one.
set -u
FSDPSIM=${FSDPSIM:-./fsdpsim}
SRCDIR=${SRCDIR:-.}
case $FSDPSIM in /*) ;; *) FSDPSIM=$(pwd)/$FSDPSIM ;; esac
case $SRCDIR in /*) ;; *) SRCDIR=$(pwd)/$SRCDIR ;; esac
shots=${1:-}
if [ -n "$shots" ]; then
    mkdir -p "$shots" || exit 1
    case $shots in /*) ;; *) shots=$(pwd)/$shots ;; esac
fi
browser=
for b in chromium chromium-browser google-chrome; do
    command -v $b >/dev/null 2>&1 && { browser=$b; break; }
done
[ -n "$browser" ] || { echo "SKIP: no chromium"; exit 77; }
command -v gnuplot >/dev/null 2>&1 || { echo "SKIP: no gnuplot"; exit 77; }
width=${FIT_WIDTH:-1280}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
mkdir home
# Chromium wants a writable home and, as root, no sandbox.
run_browser() {
    HOME=$work/home timeout 120 "$browser" --headless --no-sandbox \
        --disable-gpu --hide-scrollbars "$@" 2>/dev/null
}

# The probe: the page's width against the window's, and every element
# and run of text (outside the plots' SVG) whose right edge is past the
# window without a scrolling box around it.  Its findings go into a <pre> the DOM dump
# shows.
cat >probe.html <<'EOF'
<script>
(function () {
  var W = window.innerWidth, out = [];
  out.push("page " + document.documentElement.scrollWidth + " of " + W);
  function scroller(e) {
    for (var p = e.parentElement || e.parentNode; p && p !== document.body; p = p.parentElement)
      if (getComputedStyle(p).overflowX !== "visible") return p;
    return null;
  }
  var all = document.body.getElementsByTagName("*");
  for (var i = 0; i < all.length; i++) {
    var e = all[i], tag = e.tagName.toLowerCase();
    if (e.closest("svg") && tag !== "svg") continue;
    var r = e.getBoundingClientRect(), s = getComputedStyle(e);
    if (s.overflowX !== "visible" && e.scrollWidth > e.clientWidth + 1)
      out.push("scrolls " + tag + " " + e.clientWidth + " of " + e.scrollWidth);
    if (r.right > W + 0.5 && !scroller(e))
      out.push("past " + tag + " " + Math.round(r.right) + ": " +
               (e.textContent || "").slice(0, 60));
  }
  // Text runs past its box without making the box wider: measure it.
  var walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT),
      range = document.createRange(), t;
  while ((t = walk.nextNode())) {
    var parent = t.parentElement;
    if (!t.nodeValue.trim() || (parent.closest("svg") && parent.tagName.toLowerCase() !== "svg") ||
        parent.closest("script,style"))
      continue;
    range.selectNodeContents(t);
    var right = range.getBoundingClientRect().right;
    if (right > W + 0.5 && !scroller(t))
      out.push("past text " + Math.round(right) + ": " + t.nodeValue.slice(0, 60));
  }
  var pre = document.createElement("pre");
  pre.id = "fit-probe";
  pre.textContent = out.join("\n");
  document.body.appendChild(pre);
})();
</script>
EOF

pass=0
fail=0
# check NAME PAGE: lay PAGE out at $width pixels and judge it.
check() {
    name=$1 page=$2
    if [ ! -s "$page" ]; then
        echo "FAIL $name: no page written"; fail=$((fail + 1)); return
    fi
    sed '/<\/body>/,$d' "$page" >"probe-$name.html"
    cat probe.html >>"probe-$name.html"
    echo '</body></html>' >>"probe-$name.html"
    run_browser --window-size=$width,1000 --dump-dom "probe-$name.html" |
        sed -n '/<pre id="fit-probe">/,/<\/pre>/p' |
        sed 's/<[^>]*>//g' >"fit-$name.txt"
    if ! grep -q "^page " "fit-$name.txt"; then
        echo "FAIL $name: the browser did not lay the page out"
        fail=$((fail + 1)); return
    fi
    w=$(sed -n 's/^page \([0-9]*\) of .*/\1/p' "fit-$name.txt")
    sed -n 's/^scrolls /  note: scrolls in its box: /p' "fit-$name.txt"
    if [ "$w" -gt $width ] || grep -q '^past ' "fit-$name.txt"; then
        echo "FAIL $name: ${w} pixels wide in a $width-pixel window"
        grep '^past ' "fit-$name.txt" | head -5 | sed 's/^/  /'
        fail=$((fail + 1))
    else
        echo "ok $name: $w pixels of $width"
        pass=$((pass + 1))
    fi
    if [ -n "$shots" ]; then
        # Tall enough for the page (a screenshot is of the window).
        h=$(($(wc -c <"$page") / 200 + 2000))
        [ $h -gt 16000 ] && h=16000
        run_browser --window-size=$width,$h \
            --screenshot="$shots/$name.png" "$page" >/dev/null
    fi
}

# The documentation's examples, each with its report.
"$FSDPSIM" simulate --model llama2-7b --topology dgx-a100-80g --nodes 2 \
    --param-dtype bf16 --report simulate.html \
    --timeline t.dat --memory m.dat >/dev/null
check simulate simulate.html
"$FSDPSIM" report --html report.html --timeline t.dat --memory m.dat \
    >/dev/null
check report report.html
"$FSDPSIM" sweep --model llama2-7b --topology dgx-a100-80g \
    --param-dtype bf16 --auto-wrap-policy size --vary nodes=1:8:x2 \
    --vary min_num_params=1e7:1e9:log10 --metric tokens_per_s_per_gpu \
    --report sweep.html >/dev/null
check sweep sweep.html
"$FSDPSIM" tune --model llama2-13b --topology dgx-a100-80g --nodes 2 \
    --report tune.html >/dev/null
check tune tune.html
# Two GPU types, the widest table (Spot columns), and a report path with
# no place to break, which the command line must still wrap.
"$FSDPSIM" plan --model llama3-70b --tokens 2T --deadline 30d \
    --gpu dgx-h100 --gpu dgx-a100-80g \
    --report plan.html >/dev/null
check plan plan.html
long=report_of_llama3_70b_on_fifteen_trillion_tokens_with_spot_prices_and_a_deadline_of_one_hundred_and_fifty_days_at_most.html
"$FSDPSIM" plan --model llama3-70b --tokens 15T --deadline 150d \
    --gpu dgx-h100 --price dgx-h100=3.9/gpu-hour \
    --spot-price dgx-h100=2.5/gpu-hour --global-batch-tokens 16M \
    --max-nodes 2048 --report "$long" >/dev/null
check plan-spot "$long"
if "$FSDPSIM" coll allgather -t test-2x4 -b 1M -e 1M --network simgrid \
        >/dev/null 2>&1; then
    "$FSDPSIM" plan --model llama2-7b --tokens 1T --deadline 10d \
        --gpu fat-tree-h100-1024 --max-nodes 64 --network simgrid \
        --set network.oversubscription=4:1 --report plan-simgrid.html \
        >/dev/null
    check plan-simgrid plan-simgrid.html
fi
sh "$SRCDIR/reports/scenarios/run.sh" "$FSDPSIM" "$SRCDIR" scenarios.html \
    >/dev/null 2>&1
check scenarios scenarios.html

echo "$pass passed, $fail failed"
[ $fail = 0 ]
