# tune.gp: throughput of one FSDP setting against size_based_auto_wrap_
# policy's min_num_params (written by fsdpsim tune --plot / --report).
# usage: gnuplot -c tune.gp DATA OUT.png [png|svg]
# DATA rows: min_num_params units tokens_per_s_per_gpu fits (1 or 0);
# each row is a different set of FSDP units, ascending thresholds.
data = ARG1
outfile = ARG2
term = (ARGC >= 3 && ARG3 ne "") ? ARG3 : "png"
if (term eq "svg") {
    set terminal svg size 1000,500 font "DejaVu Sans,12" background "white"
} else {
    set terminal pngcairo size 1000,500 font "DejaVu Sans,12"
}
set output outfile
set termoption noenhanced
set title "Throughput over min_num_params"
set grid
set logscale x
set format x "%.0e"
set xlabel "min_num_params (size_based_auto_wrap_policy)"
set ylabel "tokens/s per GPU"
set key outside right top
# Room above the highest point for its "N units" label, which would
# otherwise run into the frame.
set offsets graph 0.03, graph 0.03, graph 0.12, graph 0.05
plot data using 1:3 with lines lw 2 lc rgb "#2b6cb0" notitle, \
     data using 1:($4 == 1 ? $3 : NaN) with points pt 7 ps 1.3 \
         lc rgb "#2b6cb0" title "fits", \
     data using 1:($4 == 0 ? $3 : NaN) with points pt 6 ps 1.3 \
         lc rgb "#c53030" title "does not fit", \
     data using 1:3:(sprintf("%d units", $2)) with labels offset 0,1 \
         font ",9" notitle
