# Fig. 4: (ARKCoS - FSHT) / RMS(FSHT map) for a 1 degree FWHM Gaussian, in
# 10 degree patches at the north pole and on the equator (gnomonic).
load datadir.'/fig4.vars.gp'
W = 1250; H = 1080
load 'plots/common.gp'
set multiplot layout 2,2 title title font ',13' margins 0.07, 0.89, 0.06, 0.90 spacing 0.17, 0.10
set size ratio -1
set xlabel 'x (east) [deg]'
set ylabel 'y (north) [deg]'
set cblabel 'difference / RMS(FSHT map)' offset 0.5,0
set format cb '%.1e'
set xrange [-5:5]; set yrange [-5:5]
set xtics 2.5; set ytics 2.5
# diverging palette, symmetric about 0 in every panel
set palette defined (-1 '#2166ac', -0.5 '#92c5de', 0 '#f7f7f7', 0.5 '#f4a582', 1 '#b2182b')
set datafile missing 'NaN'
panel(f, t) = sprintf('%s', t)
do for [k=1:4] {
  tag = (k <= 2) ? 'enh' : 'pap'
  where = (k % 2 == 1) ? 'pole' : 'eq'
  f = value('f_'.tag.'_'.where)
  mode = (tag eq 'enh') ? 'enhanced' : 'paper mode'
  place = (where eq 'pole') ? 'north pole (θ = 0°)' : 'equator (θ = 90°, φ = 0°)'
  if (strlen(f) > 0) {
    stats f u 3 nooutput
    m = (abs(STATS_min) > abs(STATS_max)) ? abs(STATS_min) : abs(STATS_max)
    if (m == 0) { m = 1e-16 }
    set cbrange [-m:m]
    set title sprintf("ARKCoS %s, %s\nmax |diff| %.1e", mode, place, m) font ',11'
    plot f u 1:2:3 w image notitle
  } else {
    set title sprintf('ARKCoS %s, %s: not run', mode, place)
    unset colorbox
    plot 0 notitle lc rgb 'white'
    set colorbox
  }
}
unset multiplot
