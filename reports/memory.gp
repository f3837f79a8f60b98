# memory.gp: per-GPU memory over a simulated run, by category.
# usage: gnuplot -c memory.gp MEMORY.dat OUT.png [png|svg]
# Columns of MEMORY.dat (fsdpsim simulate --memory): t_us allocated_bytes
# reserved_bytes, then one column per category (names in the header).
datafile = ARG1
outfile = ARG2
term = (ARGC >= 3 && ARG3 ne "") ? ARG3 : "png"
if (term eq "svg") {
    set terminal svg size 1200,500 font "DejaVu Sans,10" background "white"
} else {
    set terminal pngcairo size 1200,500 font "DejaVu Sans,10"
}
set output outfile
set termoption noenhanced
set title "fsdpsim memory per GPU"
set xlabel "time (ms)"
set ylabel "GiB"
set grid
set key outside right top
GiB = 1073741824.0
names = "sharded_params unsharded_params grad_unsharded grad_sharded optimizer_state activations allgather_buffers reducescatter_buffers offload_staging"
plot datafile using ($1/1000):($3/GiB) with steps lw 2 lc rgb "#1a202c" title "reserved", \
     datafile using ($1/1000):($2/GiB) with steps lw 2 lc rgb "#c53030" title "allocated", \
     for [i=1:9] datafile using ($1/1000):(column(3+i)/GiB) with steps lw 1 title word(names, i)
