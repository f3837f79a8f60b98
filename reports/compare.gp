# compare.gp: a predicted and a measured step, one Gantt chart above the
# other (one row per stream), on the same time axis.
# usage: gnuplot -c compare.gp PRED.dat MEAS.dat OUT.png [png|svg]
#                [PRED-TITLE] [MEAS-TITLE]
# Columns of both data files (written by fsdpsim compare --plot): lane
# stream kind start_ms end_ms, times from the step's first op.
pred = ARG1
meas = ARG2
outfile = ARG3
term = (ARGC >= 4 && ARG4 ne "") ? ARG4 : "png"
ptitle = (ARGC >= 5 && ARG5 ne "") ? ARG5 : "predicted"
mtitle = (ARGC >= 6 && ARG6 ne "") ? ARG6 : "measured"
if (term eq "svg") {
    set terminal svg size 1200,800 font "DejaVu Sans,10" background "white"
} else {
    set terminal pngcairo size 1200,800 font "DejaVu Sans,10"
}
set output outfile
set termoption noenhanced
stats pred using 5 nooutput
pmax = STATS_max
stats pred using 1 nooutput
plane = STATS_max
stats meas using 5 nooutput
mmax = STATS_max
stats meas using 1 nooutput
mlane = STATS_max
xmax = (pmax > mmax ? pmax : mmax) * 1.02
set xrange [0:xmax]
set grid xtics
set style fill solid 0.8 noborder
# One colour per op kind, as in timeline.gp; "compute" is a profiler
# kernel that is not NCCL's, "nccl" another NCCL kernel.
kc(k) = k eq "forward" ? 0x2b6cb0 : k eq "backward" ? 0x805ad5 : \
        k eq "recompute" ? 0xb794f4 : k eq "allgather" ? 0x38a169 : \
        k eq "reducescatter" ? 0xdd6b20 : k eq "allreduce" ? 0xc53030 : \
        k eq "optimizer" ? 0x2d3748 : k eq "h2d" || k eq "d2h" ? 0xd69e2e : \
        k eq "compute" ? 0x4a5568 : k eq "nccl" ? 0x9c4221 : 0xa0aec0
# Fixed margins keep the two time axes aligned (the key sits in the
# right margin of the upper chart only).
set lmargin 12
set rmargin 24
set multiplot layout 2,1
set title ptitle
set xlabel "time from the step's first op (ms)"
set yrange [plane + 0.6:-0.6]
set key at screen 0.99, screen 0.95 right top
plot pred using (($4+$5)/2):1:(($5-$4)/2):(0.38):(kc(strcol(3))):ytic(2) \
     with boxxyerror lc rgb variable notitle, \
     NaN with boxes lc rgb "#2b6cb0" title "forward", \
     NaN with boxes lc rgb "#805ad5" title "backward", \
     NaN with boxes lc rgb "#38a169" title "all-gather", \
     NaN with boxes lc rgb "#dd6b20" title "reduce-scatter", \
     NaN with boxes lc rgb "#c53030" title "all-reduce", \
     NaN with boxes lc rgb "#2d3748" title "optimizer", \
     NaN with boxes lc rgb "#4a5568" title "compute (trace)", \
     NaN with boxes lc rgb "#a0aec0" title "cast/copy"
set title mtitle
set yrange [mlane + 0.6:-0.6]
plot meas using (($4+$5)/2):1:(($5-$4)/2):(0.38):(kc(strcol(3))):ytic(2) \
     with boxxyerror lc rgb variable notitle, \
     NaN with boxes lc rgb "#ffffff" notitle
unset multiplot
