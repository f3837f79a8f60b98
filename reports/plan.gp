# plan.gp: time to train and cost against cluster size, one line per GPU
# type (written by fsdpsim plan --plot / --report).
# usage: gnuplot -c plan.gp DATA OUT.png [png|svg] [COSTLABEL] [DEADLINE]
#        [EXPECTED] [SPOT] [SIMGRID]
# DATA holds one block per GPU type, separated by two blank lines (gnuplot
# index); a block's first line is "gpus days TITLE", then "gpus days cost
# exp_days exp_cost spot_days spot_cost sg_days sg_cost sg_exp_days
# sg_exp_cost" rows (NaN where a number is missing).  DEADLINE, in days,
# draws a dashed line on the time plot (0: none).  EXPECTED 1 adds the
# expected time and cost with failures (dashed), SPOT 1 those on Spot
# capacity (dotted), SIMGRID 1 the finalists' SimGrid figures as
# triangles beside the analytic circles (filled failure-free, hollow
# expected).
data = ARG1
outfile = ARG2
term = (ARGC >= 3 && ARG3 ne "") ? ARG3 : "png"
costlabel = (ARGC >= 4 && ARG4 ne "") ? ARG4 : "cost (USD)"
deadline = (ARGC >= 5 && ARG5 ne "") ? real(ARG5) : 0
expected = (ARGC >= 6 && ARG6 ne "") ? int(ARG6) : 0
spot = (ARGC >= 7 && ARG7 ne "") ? int(ARG7) : 0
simgrid = (ARGC >= 8 && ARG8 ne "") ? int(ARG8) : 0
if (term eq "svg") {
    set terminal svg size 1000,800 font "DejaVu Sans,12" background "white"
} else {
    set terminal pngcairo size 1000,800 font "DejaVu Sans,12"
}
set output outfile
set termoption noenhanced
stats data using 1 nooutput
nblocks = STATS_blocks
set multiplot layout 2,1
# A fixed left margin: the time and cost plots share the GPUs axis, which
# lines up only when both leave the same room for their tick labels (the
# right margin is the key's, the same in both plots).
set lmargin 12
set grid
set logscale x 2
set logscale y
set key outside right top
set format x "%g"
set xlabel "GPUs"
set ylabel "days to train"
set title "Time to train"
if (deadline > 0) {
    set arrow 1 from graph 0, first deadline to graph 1, first deadline \
        nohead dashtype 2 lw 2 lc rgb "#c53030" front
    set label 1 sprintf("deadline %g d", deadline) at graph 0.01, \
        first deadline offset 0,0.7 tc rgb "#c53030"
}
plot for [i=0:nblocks-1] data index i using 1:2 with linespoints \
     pointtype 7 pointsize 0.8 lw 2 lc i+1 title columnheader(3), \
     for [i=0:(expected ? nblocks-1 : -1)] data index i using 1:4 \
     with linespoints pointtype 6 pointsize 0.8 lw 2 dashtype 2 lc i+1 \
     title "expected", \
     for [i=0:(spot ? nblocks-1 : -1)] data index i using 1:6 \
     with linespoints pointtype 4 pointsize 0.8 lw 2 dashtype 3 lc i+1 \
     title "Spot", \
     for [i=0:(simgrid ? nblocks-1 : -1)] data index i using 1:8 \
     with points pointtype 9 pointsize 1.4 lc i+1 title "SimGrid", \
     for [i=0:(simgrid && expected ? nblocks-1 : -1)] data index i \
     using 1:10 with points pointtype 8 pointsize 1.4 lw 2 lc i+1 \
     title "SimGrid expected"
unset arrow 1
unset label 1
set title "Cost to train"
set ylabel costlabel
unset logscale y
set yrange [0:*]
set format y "%.2s%c"
plot for [i=0:nblocks-1] data index i using 1:3 with linespoints \
     pointtype 7 pointsize 0.8 lw 2 lc i+1 title columnheader(3), \
     for [i=0:(expected ? nblocks-1 : -1)] data index i using 1:5 \
     with linespoints pointtype 6 pointsize 0.8 lw 2 dashtype 2 lc i+1 \
     title "expected", \
     for [i=0:(spot ? nblocks-1 : -1)] data index i using 1:7 \
     with linespoints pointtype 4 pointsize 0.8 lw 2 dashtype 3 lc i+1 \
     title "Spot", \
     for [i=0:(simgrid ? nblocks-1 : -1)] data index i using 1:9 \
     with points pointtype 9 pointsize 1.4 lc i+1 title "SimGrid", \
     for [i=0:(simgrid && expected ? nblocks-1 : -1)] data index i \
     using 1:11 with points pointtype 8 pointsize 1.4 lw 2 lc i+1 \
     title "SimGrid expected"
unset multiplot
