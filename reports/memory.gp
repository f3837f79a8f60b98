# memory.gp: per-GPU memory over a simulated run, by category.
# usage: gnuplot -c memory.gp MEMORY.dat OUT.png [png|svg [PER_US UNIT]]
# Columns of MEMORY.dat (fsdpsim simulate --memory): t_us allocated_bytes
# reserved_bytes, then one column per category (names in the header).
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
set termoption noenhanced
set title "fsdpsim memory per GPU"
# Both plots share one clock: simulated time since the run's start.
set xlabel sprintf("simulated time since the run's start (%s); the caching allocator's view, the timeline's clock", unit)
set ylabel "GiB"
set grid
set key outside right top
# Fixed margins, the same in timeline.gp and memory.gp: the two plots of
# a report stand one above the other on one clock, so their time axes
# line up (the stream names and the category key both fit).
set lmargin 18
set rmargin 30
GiB = 1073741824.0
names = "sharded_params unsharded_params grad_unsharded grad_sharded optimizer_state activations allgather_buffers reducescatter_buffers offload_staging"
plot datafile using ($1/per_us):($3/GiB) with steps lw 2 lc rgb "#1a202c" title "reserved", \
     datafile using ($1/per_us):($2/GiB) with steps lw 2 lc rgb "#c53030" title "allocated", \
     for [i=1:9] datafile using ($1/per_us):(column(3+i)/GiB) with steps lw 1 title word(names, i)
