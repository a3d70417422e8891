# Fig. 3: the kernels of the accuracy tests (6' and 1 degree FWHM Gaussians,
# truncated and normalised) and their Legendre coefficients K_l.
load datadir.'/fig3.vars.gp'
W = 1300; H = 560
load 'plots/common.gp'
set multiplot layout 1,2 title "Fig. 3: Gaussian kernels truncated at 10^{-8} of their peak, normalised to unit integral (K_0 = 1)" font ',13'
set grid
set logscale xy
set format y '10^{%L}'
set title 'profile'
set xlabel 'angular distance α [arcmin]'
set ylabel 'K(α) / K(0)'
set xrange [0.3:250]
set yrange [1e-10:3]
set key bottom left
set arrow 1 from cut6, graph 0 to cut6, graph 1 nohead lc rgb '#d95f02' lw 1.5 dt 3
set arrow 2 from cut60, graph 0 to cut60, graph 1 nohead lc rgb '#1b9e77' lw 1.5 dt 3
set label 1 sprintf("cutoff %.1f'", cut6) at cut6, graph 0.93 right offset -0.5,0 tc rgb '#d95f02' font ',9'
set label 2 sprintf("cutoff %.0f' = %.2f°", cut60, cut60/60) at cut60, graph 0.93 right offset -0.5,0 tc rgb '#1b9e77' font ',9'
plot f_k6 index 0 u 1:($3 > 0 ? $3 : NaN) w l lw 2.5 lc rgb '#d95f02' t "6' FWHM", \
     f_k60 index 0 u 1:($3 > 0 ? $3 : NaN) w l lw 2.5 dt 2 lc rgb '#1b9e77' t "1° FWHM"
unset arrow; unset label
set title 'Legendre coefficients'
set xlabel 'multipole l'
set ylabel '|K_l|'
set xrange [1:8192]
set yrange [1e-10:3]
set xtics (1, 10, 100, 1000, 4096)
set key bottom left
plot f_k6 index 1 u 1:(abs($2)) w l lw 2.5 lc rgb '#d95f02' t "6' FWHM", \
     f_k60 index 1 u 1:(abs($2)) w l lw 2.5 dt 2 lc rgb '#1b9e77' t "1° FWHM"
unset multiplot
