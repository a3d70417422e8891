# Narrow beams (docs/NARROW_BEAMS.md): the pixel sum of a Gaussian cut at
# 1e-5 (arkcos, equal to the direct sum) against libsharp smoothing (lmax
# 3 nside - 1, iter 3, as healpy.smoothing) of a white random map, against
# pixels per FWHM, with and without --normalize; one colour per nside.
# Data: datadir/narrow.dat from tools/narrow_beams (scripts/reproduce.sh):
#   nside ppf fsht fsht_norm exact exact_norm const_min const_max fsht_exact
W = 1000; H = 640
load 'plots/common.gp'
f = datadir.'/narrow.dat'
# the nsides measured, in order
nsides = system("awk '{print $1}' '".f."' | sort -un | tr '\\n' ' '")
set logscale xy
set format y '10^{%L}'
set grid
set xrange [0.9:9]
set xtics (1, 1.5, 2, 2.5, 3, 4, 6, 8)
set xlabel 'pixels per FWHM'
set ylabel 'rms(arkcos - libsharp) / rms(libsharp)'
set title 'Narrow Gaussian beams against harmonic smoothing'
set key top right font ',10'
set arrow from 1, graph 0 to 1, graph 1 nohead dt 3 lc rgb '#888888'
set arrow from 2.5, graph 0 to 2.5, graph 1 nohead dt 3 lc rgb '#888888'
set label 'refused below' at 1.02, graph 0.05 font ',9' tc rgb '#666666'
set label 'warned below' at 2.55, graph 0.05 font ',9' tc rgb '#666666'
col(n) = n <= 64 ? '#1f77b4' : n <= 256 ? '#d62728' : n <= 1024 ? '#2ca02c' : '#9467bd'
sel(n, y) = ($1 == n) ? y : NaN
plot for [n in nsides] f u 2:(sel(n + 0, $3)) w lp pt 7 ps 0.8 lw 2 lc rgb col(n + 0) t 'nside '.n, \
     for [n in nsides] f u 2:(sel(n + 0, $4)) w lp pt 6 ps 0.8 lw 2 dt 2 lc rgb col(n + 0) t 'nside '.n.', --normalize', \
     for [n in nsides] f u 2:(sel(n + 0, $9)) w l lw 1 dt 3 lc rgb col(n + 0) t 'nside '.n.': libsharp vs exact'
