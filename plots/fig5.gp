# Fig. 5: power-spectrum accuracy for a narrow Gaussian. Left: spectrum of the
# smoothed map minus the exact spectrum; right: spectrum of the difference map.
# Exact spectrum (of alm2map(K_l a_lm)) dashed; D_l = l(l+1) C_l / 2 pi.
load datadir.'/fig5.vars.gp'
W = 1400; H = 620
load 'plots/common.gp'
set multiplot layout 1,2 title title font ',13'
set logscale y
set format y '10^{%L}'
set grid
set xlabel 'multipole l'
set ylabel 'l(l+1) C_l / 2π  [map units^2]'
set xrange [2:lmax]
set key below font ',10' maxrows 2 height 1.5
D(l, c) = l * (l + 1) * c / (2 * pi)
pos(l, x) = (l >= 2 && x > 0) ? D(l, x) : NaN
neg(l, x) = (l >= 2 && x < 0) ? D(l, -x) : NaN
hasf = strlen(f_fsht) > 0
set title 'C_l(map) - C_l(exact)'
plot f_ark u 1:(pos($1, $2 - $3)) w p pt 7 ps 0.25 lc rgb '#d62728' t 'ARKCoS: positive', \
     f_ark u 1:(neg($1, $2 - $3)) w p pt 7 ps 0.25 lc rgb '#1f77b4' t 'ARKCoS: negative (absolute value)', \
     for [i=1:hasf] f_fsht u 1:(abs($2 - $3) > 0 && $1 >= 2 ? D($1, abs($2 - $3)) : NaN) w l lw 1 lc rgb '#999999' t fsht_label.': |difference|', \
     f_ark u 1:($1 >= 2 ? D($1, $3) : NaN) w l lw 2 dt 2 lc rgb 'black' t 'exact spectrum'
set title 'C_l(map - exact)'
# points, not lines: these spectra alternate between even and odd l
plot f_ark u 1:($1 >= 2 && $4 > 0 ? D($1, $4) : NaN) w p pt 7 ps 0.25 lc rgb '#d62728' t 'ARKCoS - exact', \
     for [i=1:hasf] f_fsht u 1:($1 >= 2 && $4 > 0 ? D($1, $4) : NaN) w p pt 7 ps 0.25 lc rgb '#999999' t fsht_label.' - exact', \
     f_ark u 1:($1 >= 2 ? D($1, $3) : NaN) w l lw 2 dt 2 lc rgb 'black' t 'exact spectrum'
unset multiplot
