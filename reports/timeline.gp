# timeline.gp: Gantt chart of one simulated run, one row per CUDA stream.
# usage: gnuplot -c timeline.gp TIMELINE.dat OUT.png [png|svg [PER_US UNIT]]
# Columns of TIMELINE.dat (fsdpsim simulate --timeline): stream_index
# stream op kind unit iter micro start_us end_us bytes.
datafile = ARG1
outfile = ARG2
term = (ARGC >= 3 && ARG3 ne "") ? ARG3 : "png"
# ARG4 ARG5: the report's one time unit (fsdpsim picks it once for all its
# plots): microseconds per unit and its name.  Default ms.
per_us = (ARGC >= 5 && ARG4 ne "") ? real(ARG4) : 1000.0
unit = (ARGC >= 5 && ARG5 ne "") ? ARG5 : "ms"
if (term eq "svg") {
    set terminal svg size 1200,500 font "DejaVu Sans,10" background "white"
} else {
    set terminal pngcairo size 1200,500 font "DejaVu Sans,10"
}
set output outfile
# An op drawn at its true width is a hair where the run lasts thousands
# of times longer (a 50 us cast on a 1 s axis is 0.04 pixel), and whether
# the browser or cairo paints it then depends on where it falls between
# pixels.  Every op is at least about one pixel wide (the plot area is
# about 900 of the 1200), so short ops show where they happen, evenly.
# (stats before any range is set, which it would obey)
stats datafile using 9 nooutput
min_half = STATS_max / per_us / 1800.0
half(d) = d > min_half ? d : min_half
set termoption noenhanced
set title "fsdpsim timeline (per stream)"
# Both plots share one clock: simulated time since the run's start.
set xlabel sprintf("simulated time since the run's start (%s); GPU ops, the memory plot's clock", unit)
set ytics ("C compute" 0, "PU pre-unshard" 1, "U all-gather" 2, "P reduce-scatter" 3, "A all-reduce" 4, "HOST" 5)
set yrange [5.6:-0.6]
# Time starts at 0 even where an op at 0 is drawn wider than it lasts.
set xrange [0:*]
set grid xtics
set style fill solid 0.8 noborder
set key outside right top
# Fixed margins, the same in timeline.gp and memory.gp: the two plots of
# a report stand one above the other on one clock, so their time axes
# line up (the stream names and the category key both fit).
set lmargin 18
set rmargin 30
# One colour per op kind; kind names as fsdpsim writes them.
kc(k) = k eq "forward" ? 0x2b6cb0 : k eq "backward" ? 0x805ad5 : \
        k eq "recompute" ? 0xb794f4 : k eq "allgather" ? 0x38a169 : \
        k eq "reducescatter" ? 0xdd6b20 : k eq "allreduce" ? 0xc53030 : \
        k eq "optimizer" ? 0x2d3748 : k eq "h2d" || k eq "d2h" ? 0xd69e2e : \
        0xa0aec0
plot datafile using (($8+$9)/(2*per_us)):1:(half(($9-$8)/(2*per_us))):(0.38):(kc(strcol(4))) \
     with boxxyerror lc rgb variable notitle, \
     NaN with boxes lc rgb "#2b6cb0" title "forward", \
     NaN with boxes lc rgb "#805ad5" title "backward", \
     NaN with boxes lc rgb "#b794f4" title "recompute", \
     NaN with boxes lc rgb "#38a169" title "all-gather", \
     NaN with boxes lc rgb "#dd6b20" title "reduce-scatter", \
     NaN with boxes lc rgb "#c53030" title "all-reduce", \
     NaN with boxes lc rgb "#2d3748" title "optimizer", \
     NaN with boxes lc rgb "#a0aec0" title "cast/copy"
