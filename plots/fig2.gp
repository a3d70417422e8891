# Fig. 2: run time and speed-up of ARKCoS over libsharp FSHT smoothing
# against nside, for kernel supports (diameters) of 1, 4 and 16 degrees.
load datadir.'/fig2.vars.gp'
W = 1400; H = 760
load 'plots/common.gp'
set multiplot layout 1,2 title "Fig. 2: ARKCoS against FSHT smoothing (".subtitle.")\nsupport = kernel diameter = 2 × cutoff radius; FSHT = libsharp map2alm (0 or 3 Jacobi iterations) + alm2map, lmax = 2 nside" font ',12'
set logscale xy
set xlabel 'nside'
set xtics (64, 128, 256, 512, 1024, 2048, 4096, 8192)
set xrange [nside_min/1.3:nside_max*1.3]
set grid
set key below Left reverse font ',9' spacing 1.1 maxrows 4 width 1 height 1.5
set ylabel 'run time [s]'
set format y '10^{%L}'
# colour per support, dash per method
array col[3] = ['#1b9e77', '#d95f02', '#7570b3']
set title 'run time (median)'
plot for [i=0:nsupports-1] datadir.'/fig2_times_arkcos-cpu-enhanced-double.dat' index i u 1:2 w lp lw 2 pt 7 lc rgb col[i+1] \
       t sprintf('ARKCoS CPU, support %s°', word(supports, i+1)), \
     for [i=0:(has_gpu ? nsupports-1 : -1)] datadir.'/fig2_times_arkcos-gpu-enhanced-double.dat' index i u 1:2 w lp lw 2 pt 5 lc rgb col[i+1] \
       t sprintf('ARKCoS GPU, support %s°', word(supports, i+1)), \
     datadir.'/fig2_times_fsht-iter0.dat' index 0 u 1:2 w lp lw 2 dt 2 pt 6 lc rgb 'black' t 'FSHT iter 0', \
     datadir.'/fig2_times_fsht-iter3.dat' index 0 u 1:2 w lp lw 2 dt 3 pt 4 lc rgb 'black' t 'FSHT iter 3'
set title 'speed-up t_{FSHT} / t_{ARKCoS}'
set ylabel 'speed-up over FSHT (same threads)'
set format y '%g'
set ytics add ('1' 1)
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 4 lc rgb 'gray40'
plot for [i=0:nsupports-1] datadir.'/fig2_speedup_cpu_iter0.dat' index i u 1:4 w lp lw 2 pt 7 lc rgb col[i+1] \
       t sprintf('CPU vs iter 0, support %s°', word(supports, i+1)), \
     for [i=0:nsupports-1] datadir.'/fig2_speedup_cpu_iter3.dat' index i u 1:4 w lp lw 2 dt 2 pt 6 lc rgb col[i+1] \
       t sprintf('CPU vs iter 3, support %s°', word(supports, i+1)), \
     for [i=0:(has_gpu ? nsupports-1 : -1)] datadir.'/fig2_speedup_gpu_iter0.dat' index i u 1:4 w lp lw 3 pt 5 lc rgb col[i+1] \
       t sprintf('GPU vs iter 0, support %s°', word(supports, i+1)), \
     for [i=0:(has_gpu ? nsupports-1 : -1)] datadir.'/fig2_speedup_gpu_iter3.dat' index i u 1:4 w lp lw 3 dt 2 pt 4 lc rgb col[i+1] \
       t sprintf('GPU vs iter 3, support %s°', word(supports, i+1))
unset multiplot
