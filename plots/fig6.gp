# Fig. 6: point sources (upper row in the north polar cap, lower row in the
# belt) smoothed with a narrow Gaussian: log10 |value| / max in one 13 degree
# patch centred on the edge of the polar cap, for FSHT, ARKCoS paper mode and
# ARKCoS enhanced mode.
load datadir.'/fig6.vars.gp'
W = 1650; H = 560
load 'plots/common.gp'
set multiplot layout 1,3 title title font ',13' margins 0.05, 0.94, 0.12, 0.84 spacing 0.09, 0.1
set size ratio -1
set xlabel 'x (east) [deg]'
set ylabel 'y (north) [deg]'
set xrange [-6.5:6.5]; set yrange [-6.5:6.5]
set xtics 2; set ytics 2
if (!exists("cbmin")) cbmin = -16
set cbrange [cbmin:0]
set cbtics 2
set cblabel 'log_{10} |value| / max' offset 0.5,0
set palette defined (0 '#000004', 0.25 '#51127c', 0.5 '#b73779', 0.75 '#fc8961', 1 '#fcfdbf')
# An exact 0 (NaN in the log patch) and anything below 10^cbmin take the
# darkest colour; NaN must not be dropped, or the image grid breaks.
clip(v) = (v == v && v > cbmin) ? v : cbmin
# the edge of the polar cap (z = 2/3) runs through the centre of the patch
set arrow 1 from -6.5, 0 to 6.5, 0 nohead dt 3 lc rgb '#7fbfff' front
set label 1 'cap' at 6.3, 0.4 right tc rgb '#7fbfff' front font ',9'
set label 2 'belt' at 6.3, -0.4 right tc rgb '#7fbfff' front font ',9'
do for [k=1:3] {
  tag = word('fsht pap enh', k)
  f = value('f_'.tag)
  name = (k == 1) ? fsht_label : (k == 2) ? 'ARKCoS, paper mode' : 'ARKCoS, enhanced'
  t = value('t_'.tag)
  set title sprintf("%s\n%s", name, t) font ',11'
  if (strlen(f) > 0) {
    plot f u 1:2:(valid(3) ? clip($3) : cbmin) w image notitle
  } else {
    plot 0 notitle lc rgb 'white'
  }
}
unset multiplot
