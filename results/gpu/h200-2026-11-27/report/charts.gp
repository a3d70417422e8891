# Drawn by `arkcos report`; rerun with `gnuplot charts.gp` in this folder.
set datafile missing 'nan'
set style data histograms
set style fill solid 0.85 border -1
set boxwidth 0.9
set key outside right top
set grid ytics
set xtics rotate by 90 right scale 0 font ',8'

set terminal pngcairo size 1400,1580 noenhanced font ',10'
set bmargin at screen 0.5570
set output 'time_per_case.png.tmp'
set title 'Median time per case (log scale)'
set style histogram clustered gap 1
set logscale y
set yrange [*:*]
set ylabel 'median time [s]'
plot 'time_per_case.dat' using 2:xtic(1) title 'M1 vm', 'time_per_case.dat' using 3 title 'M2 vm', 'time_per_case.dat' using 4 title 'M3 vm'
unset logscale y

set terminal pngcairo size 1400,1580 noenhanced font ',10'
set bmargin at screen 0.5570
set output 'speedup.png.tmp'
set title 'Speed-up over FSHT on the same machine (log scale; 1 = as fast as FSHT)'
set style histogram clustered gap 1
set logscale y
set yrange [*:*]
set ylabel 'FSHT time / case time'
plot 'speedup.dat' using 2:xtic(1) title 'M1 vm', 'speedup.dat' using 3 title 'M2 vm', 'speedup.dat' using 4 title 'M3 vm'
unset logscale y

set terminal pngcairo size 1400,1614 noenhanced font ',10'
set bmargin at screen 0.5663
set output 'stage_shares.png.tmp'
set title 'Share of arkcos run time by stage (groups of the paper''s Table 1)'
set style histogram rowstacked
set yrange [0:100]
set ylabel 'share of the stage sum [%]'
plot 'stage_shares.dat' using 2:xtic(1) title 'FFTs', '' using 3 title 'kernel evaluation', '' using 4 title 'ring reduction', '' using 5 title 'others'

unset output
