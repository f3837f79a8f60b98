# sweep.gp: one metric of a parameter sweep against the first varied key,
# one line per value of the second (written by fsdpsim sweep --plot).
# usage: gnuplot -c sweep.gp DATA OUT.png [png|svg] [XLABEL] [YLABEL]
#                [LOGX 0|1] [NUMERIC-X 0|1]
# DATA holds one block per line, separated by two blank lines (gnuplot
# index); a block's first line is "pos x TITLE", then "pos x y" rows: pos
# is the value's position on the axis (0, 1, ...), x the value itself, y
# the metric (NaN where the point is invalid: a gap in its line).  With
# NUMERIC-X 0 the values are labels placed at their positions (e.g.
# sharding strategies).
data = ARG1
outfile = ARG2
term = (ARGC >= 3 && ARG3 ne "") ? ARG3 : "png"
xlabel = (ARGC >= 4) ? ARG4 : ""
ylabel = (ARGC >= 5) ? ARG5 : ""
logx = (ARGC >= 6 && ARG6 eq "1")
numeric = !(ARGC >= 7 && ARG7 eq "0")
if (term eq "svg") {
    set terminal svg size 1000,650 font "DejaVu Sans,11" background "white"
} else {
    set terminal pngcairo size 1000,650 font "DejaVu Sans,11"
}
set output outfile
set termoption noenhanced
set key autotitle columnheader outside right top
set grid
set xlabel xlabel
set ylabel ylabel
if (logx && numeric) { set logscale x }
stats data using 1 nooutput
nblocks = STATS_blocks
if (numeric) {
    set autoscale xfix
    set offsets graph 0.02, graph 0.02, 0, 0
    # Ticks at the swept values themselves (a log axis would otherwise
    # label only its decades).
    plot for [i=0:nblocks-1] data index i using 2:3:xticlabels(stringcolumn(2)) \
         with linespoints pointtype 7 pointsize 0.8 title columnheader(3)
} else {
    set offsets 0.5, 0.5, 0, 0
    plot for [i=0:nblocks-1] data index i using 1:3:xticlabels(2) \
         with linespoints pointtype 7 pointsize 0.8 title columnheader(3)
}
