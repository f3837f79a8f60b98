#!/bin/sh
# doc-examples.sh: every example the documentation shows, run as a test.
#
# An example is a block of a shell transcript: lines "$ COMMAND" (a line
# ending in a backslash goes on to the next), each followed by what the
# command prints, stdout and stderr together.  README.md and doc/*.md name
# each example in an HTML comment on the line before its fence:
#
#     <!-- example: NAME [needs=simgrid|gnuplot|no-real ...] -->
#     ```
#     $ ./fsdpsim coll allgather -t dgx-h100 -b 1M -e 1M
#     ...
#     ```
#
# and doc/fsdpsim.1 on the line before its .EX, as a roff comment
# (.\" example: NAME).  The man page's roff escapes (\-, \e, \(aq, \&) are
# read as the characters they print.  A fenced or .EX block that shows a
# "$ fsdpsim" or "$ ./fsdpsim" line without a name is an error: every such
# example is run.
#
# Running one: a fresh temporary directory holds links to the source
# tree's data (models/, topologies/, tests/, data/, reports/) and to the
# fsdpsim under test, as ./fsdpsim and, first on PATH, as fsdpsim; the
# commands run there one after another in one shell, with no NCCL_* or
# FSDPSIM_* variable of the caller's and LC_ALL=C, and what they print is
# compared with what the block shows.  A block a document marks
# <!-- file: NAME --> (a run file, say) is written there as NAME first,
# for every example of that document.  In the shown text a line "..."
# stands for any number of lines (none included) and a line ending in
# " ..." for any line that begins with the text before it.  The exit
# status is not compared unless the example prints it (echo $?).
#
# Normalised on both sides before comparing, and nothing else:
#   - wall-clock time and resident memory of `fsdpsim bench` (the lines
#     "wall per simulated step", "summary alone", "peak RSS", "start-up",
#     "first run, SimGrid cold" and the "N points in T s" lines of a
#     sweep benchmark): on those lines a number of milliseconds, seconds,
#     MiB or a speed-up ("5.7x") reads as N, since it measures the machine
#     the test runs on, not the model (counts stay as printed);
#   - blanks at the end of a line, which Markdown does not show and
#     editors strip;
#   - the temporary directory's path, which reads as TMPDIR;
#   - AddressSanitizer's three-line warning that it cannot follow
#     SimGrid's context switches (an --enable-asan build only; the
#     program prints nothing of it).
# The commands get a TMPDIR of their own inside it.  Afterwards the
# directory must hold no temporary or lock file (*.tmp*, *.lock) and that
# TMPDIR must be empty (gnuplot's scripts go there): an example leaves
# nothing half-written behind.  Then the directory is removed.
#
# usage: tests/doc-examples.sh list        names and files, one a line
#        tests/doc-examples.sh am          tests/doc-examples.am's text
#        tests/doc-examples.sh show NAME   the block of one example
#        tests/doc-examples.sh run NAME|FILE.example
#                                          run one (exit 0, 1, or 77 when
#                                          it needs what this build lacks)
#        tests/doc-examples.sh match SHOWN PRINTED
#                                          exit 0 when PRINTED is what SHOWN
#                                          shows ("..." and " ..." as above)
#        tests/doc-examples.sh regen NAME  print the transcript as the program
#                                          prints it today, to put into the
#                                          document after review (with its
#                                          "..." elisions put back)
set -u
LC_ALL=C
export LC_ALL
srcdir=${SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
case $srcdir in /*) ;; *) srcdir=$(cd "$srcdir" && pwd) ;; esac
FSDPSIM=${FSDPSIM:-$srcdir/fsdpsim}
case $FSDPSIM in /*) ;; *) FSDPSIM=$(pwd)/$FSDPSIM ;; esac

# The man page's escapes read as the characters they print (\e last, so
# that \e\- is a backslash and a minus).
UNROFF_AWK='
    function unroff(s) {
        gsub(/\\-/, "-", s); gsub(/\\\(aq/, "\047", s); gsub(/\\\(dq/, "\"", s)
        gsub(/\\&/, "", s); gsub(/\\e/, "\\", s)
        return s
    }'

docs() {
    for f in "$srcdir"/README.md "$srcdir"/doc/*.md "$srcdir"/doc/fsdpsim.1; do
        [ -f "$f" ] && echo "${f#"$srcdir"/}"
    done
}

# scan FILE: one line "NAME<TAB>NEEDS<TAB>FIRSTLINE" per named example;
# an unnamed block showing an fsdpsim command is reported on stderr as
# FILE:LINE and makes the scan fail.
scan() {
    awk -v file="$1" '
    function is_cmd(s) {
        return s ~ /^\$ ([A-Za-z_][A-Za-z_0-9]*=[^ ]* )*(\.\/)?fsdpsim( |$)/
    }
    '"$UNROFF_AWK"'
    BEGIN { roff = (file ~ /\.1$/); bad = 0; inblk = 0 }
    {
        line = $0
        if (!inblk) {
            if (!roff && line ~ /^<!-- example: /) { pend = line; pendno = NR; next }
            if (roff && line ~ /^\.\\" example: /) { pend = line; pendno = NR; next }
            opens = roff ? (line ~ /^\.EX/) : (line ~ /^```/)
            if (opens) {
                inblk = 1; start = NR; named = ""; needs = ""
                if (pend != "" && pendno == NR - 1) {
                    s = pend; sub(/^(<!-- |\.\\" )example: /, "", s); sub(/ *-->$/, "", s)
                    n = split(s, w, " "); named = w[1]
                    for (i = 2; i <= n; i++) if (w[i] ~ /^needs=/) {
                        v = w[i]; sub(/^needs=/, "", v); needs = needs (needs == "" ? "" : ",") v
                    }
                }
                pend = ""; shows = 0
                next
            }
            pend = ""
            next
        }
        closes = roff ? (line ~ /^\.EE/) : (line ~ /^```/)
        if (closes) {
            if (named != "") print named "\t" (needs == "" ? "-" : needs) "\t" start
            else if (shows) { print file ":" shows ": an example without a name (add <!-- example: NAME --> before its block)" > "/dev/stderr"; bad = 1 }
            inblk = 0; next
        }
        if (roff) line = unroff(line)
        if (is_cmd(line) && !shows) shows = NR
    }
    END { exit bad }' "$srcdir/$1"
}

list() {
    st=0
    for f in $(docs); do
        scan "$f" > "${TMPDIR:-/tmp}/doc-examples.$$" || st=1
        while IFS='	' read -r name needs line; do
            echo "$name $f:$line $needs"
        done < "${TMPDIR:-/tmp}/doc-examples.$$"
        rm -f "${TMPDIR:-/tmp}/doc-examples.$$"
    done
    return $st
}

# block FILE LINE: the lines of the block that opens at LINE, unescaped.
block() {
    awk -v start="$2" -v roff="$(case $1 in *.1) echo 1;; *) echo 0;; esac)" '
    '"$UNROFF_AWK"'
    NR <= start { next }
    roff && /^\.EE/ { exit }
    !roff && /^```/ { exit }
    { print (roff ? unroff($0) : $0) }' "$srcdir/$1"
}

# files FILE: "NAME<TAB>LINE" for every block FILE marks as a file.
files() {
    awk '/^<!-- file: / { n = $3; getline; if ($0 ~ /^```/) print n "\t" NR }' \
        "$srcdir/$1"
}

find_example() {
    list 2>/dev/null | awk -v n="$1" '$1 == n { print $2, $3; found = 1; exit }
        END { exit !found }'
}

# match EXPECTED ACTUAL: glob matching of lines ("..." any lines; "X ..."
# any line starting X); prints a unified diff on failure.
match() {
    awk '
    FNR == 1 { fileno++ }
    fileno == 1 { e[++ne] = $0; next }
    { a[++na] = $0 }
    function eq(p, s,   pre) {
        if (p == s) return 1
        if (p ~ / \.\.\.$/) { pre = substr(p, 1, length(p) - 4); return substr(s, 1, length(pre)) == pre }
        return 0
    }
    END {
        i = 1; j = 1; star = 0; mark = 0; far = 1
        while (j <= na) {
            if (i <= ne && e[i] == "...") { star = i; mark = j; i++; continue }
            if (i <= ne && eq(e[i], a[j])) { i++; j++; if (i > far) far = i; continue }
            if (star) { i = star + 1; mark++; j = mark; continue }
            break
        }
        if (j > na) { while (i <= ne && e[i] == "...") i++; if (i > ne) exit 0 }
        if (far > ne) print "  the program prints more than the shown text holds"
        else print "  first shown line it does not print (line " far " of the block): " e[far]
        exit 1
    }' "$1" "$2"
}

normalise() {
    sed -e "s|$work|TMPDIR|g" -e 's/[ 	]*$//' \
        -e '/^==[0-9]*==WARNING: ASan is ignoring requested __asan_handle_no_return/,/^For details see https:\/\/github.com\/google\/sanitizers\/issues\/189$/d' \
        -e '/^\(wall per simulated step\|summary alone\|peak RSS\|start-up,\|first run, SimGrid cold\)/s/[0-9][0-9.]*\( ms\| s\>\| MiB\|x \)/N\1/g' \
        -e '/ points in  *[0-9.]* s /s/[0-9][0-9.]*\( ms\| s\>\)/N\1/g' "$1"
}

have() {
    case $1 in
    simgrid) "$FSDPSIM" coll allgather -t test-2x4 -b 1M -e 1M \
                 --network simgrid >/dev/null 2>&1 ;;
    gnuplot) command -v gnuplot >/dev/null 2>&1 ;;
    no-real) ! "$FSDPSIM" real run --model tiny-llama --topology test-2x4 \
                 >/dev/null 2>&1 && "$FSDPSIM" real run --model tiny-llama \
                 --topology test-2x4 2>&1 | grep -q 'real mode is not built' ;;
    *) echo "unknown need '$1'" >&2; return 1 ;;
    esac
}

# run NAME MODE: MODE check compares, regen prints the block as it runs.
run() {
    name=$1
    mode=$2
    where=$(find_example "$name") || { echo "no example named '$name'" >&2; exit 2; }
    set -- $where
    file=${1%:*}
    line=${1##*:}
    needs=$2
    if [ "$needs" != - ]; then
        for n in $(echo "$needs" | tr , ' '); do
            have "$n" || { echo "SKIP $name ($file:$line): needs $n"; exit 77; }
        done
    fi
    work=$(mktemp -d "${TMPDIR:-/tmp}/fsdpsim-example.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    block "$file" "$line" > "$work/.shown"
    for d in models topologies tests data reports; do
        ln -s "$srcdir/$d" "$work/$d"
    done
    ln -s "$FSDPSIM" "$work/fsdpsim"
    files "$file" | while IFS='	' read -r fname fline; do
        block "$file" "$fline" > "$work/$fname"
    done
    # Written as a script: each command echoed as the block shows it,
    # then run with stderr into the same stream.
    awk '
    function q(s) { gsub(/\047/, "\047\\\047\047", s); return "\047" s "\047" }
    /^\$ / || cont {
        text = cont ? $0 : substr($0, 3)
        shown = $0
        printf "printf \"%%s\\n\" %s\n", q(shown)
        body = body text "\n"
        cont = /\\$/
        if (!cont) { printf "{\n%s} 2>&1\n", body; body = "" }
        next
    }' "$work/.shown" > "$work/.script"
    for v in $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\|FSDPSIM_[A-Za-z0-9_]*\)=.*/\1/p'); do
        unset "$v"
    done
    mkdir "$work/.tmp"
    (cd "$work" && PATH="$work:$PATH" TMPDIR="$work/.tmp" FSDPSIM= SRCDIR= \
        sh ./.script) > "$work/.printed" 2>&1 < /dev/null
    normalise "$work/.shown" > "$work/.shown.n"
    normalise "$work/.printed" > "$work/.printed.n"
    left=$(cd "$work" && { find . -name .tmp -prune -o \( -name '*.tmp*' \
        -o -name '*.lock' \) -print; find .tmp -mindepth 1; } | head -5 | tr '\n' ' ')
    if [ "$mode" = regen ]; then
        cat "$work/.printed"
        return 0
    fi
    st=0
    if ! why=$(match "$work/.shown.n" "$work/.printed.n"); then
        echo "FAIL $name ($file:$line): the output differs from what $file shows"
        echo "$why"
        diff -u "$work/.shown.n" "$work/.printed.n" | sed '1,2d'
        st=1
    fi
    if [ -n "$left" ]; then
        echo "FAIL $name ($file:$line): left behind: $left"
        st=1
    fi
    [ $st = 0 ] && echo "PASS $name ($file:$line)"
    return $st
}

case ${1:-} in
list) list ;;
am)
    names=$(list | awk '{ print $1 }') || exit 1
    dup=$(echo "$names" | sort | uniq -d)
    [ -z "$dup" ] || { echo "examples named twice: $dup" >&2; exit 1; }
    echo "# Generated by tests/doc-examples.sh am from README.md, doc/*.md and"
    echo "# doc/fsdpsim.1: one test per example they show.  Do not edit."
    printf 'DOC_EXAMPLES ='
    for n in $names; do printf ' \\\n\ttests/examples/%s.example' "$n"; done
    echo ;;
show)
    where=$(find_example "$2") || { echo "no example named '$2'" >&2; exit 2; }
    set -- $where
    block "${1%:*}" "${1##*:}" ;;
run)
    n=$(basename "$2" .example)
    run "$n" check ;;
regen)
    run "$2" regen ;;
match)
    match "$2" "$3" ;;
*)
    sed -n '/^# usage:/,/^set -u/p' "$0" | sed '$d'
    exit 2 ;;
esac
