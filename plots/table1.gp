# Table 1: share of the ARKCoS run time per stage, for kernel supports
# (diameters) of 1, 4 and 16 degrees, beside the paper's GPU shares.
load datadir.'/table1.vars.gp'
W = 1200; H = 600
load 'plots/common.gp'
set title t1_title font ',12'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border rgb 'white'
set boxwidth 0.75
set yrange [0:108]
set bmargin 5.5
set ylabel 'share of run time [%]'
set ytics 0, 10, 100
set grid ytics
set xtics nomirror font ',9'
set xlabel 'kernel support (diameter = 2 × cutoff radius): the paper (GPU, nside 2048) beside this run (backend, nside)' font ',10' offset 0,-0.8
set key outside right top Left reverse title 'stage' font ',10'
set datafile missing 'NaN'
f = datadir.'/table1.dat'
# percentages inside the bars (only where the slice is large enough to read)
lab(v) = (v == v && v >= 4) ? sprintf('%.0f', v) : ''
plot f u 2:xtic(1) t 'FFTs (map, kernel, inverse)' lc rgb '#4c72b0', \
     '' u 3 t 'kernel evaluation' lc rgb '#dd8452', \
     '' u 4 t 'ring reduction' lc rgb '#55a868', \
     '' u 5 t 'others (incl. transfers)' lc rgb '#8c8c8c', \
     '' u ($0):($2/2):(lab($2)) w labels notitle font ',9' tc rgb 'white', \
     '' u ($0):($2+$3/2):(lab($3)) w labels notitle font ',9' tc rgb 'white', \
     '' u ($0):($2+$3+$4/2):(lab($4)) w labels notitle font ',9' tc rgb 'white', \
     '' u ($0):($2+$3+$4+$5/2):(lab($5)) w labels notitle font ',9' tc rgb 'white', \
     '' u ($0):(104):($6 == $6 ? sprintf('total %.3g s', $6) : '') w labels notitle font ',8'
