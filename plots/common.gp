# Shared set-up for the figure scripts: called with
#   gnuplot -e "fmt='png'; outfile='...'; datadir='...'" plots/figN.gp
# fmt is png (pngcairo) or pdf (pdfcairo); W and H are the size in pixels.
if (!exists("fmt")) fmt = 'png'
if (!exists("W")) W = 1200
if (!exists("H")) H = 600
if (fmt eq 'pdf') {
  set terminal pdfcairo enhanced color font 'Sans,9' size W/140.0, H/140.0
} else {
  set terminal pngcairo enhanced color font 'Sans,11' size W, H
}
set output outfile
set encoding utf8
