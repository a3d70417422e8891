#!/usr/bin/env bash
# make reproduce [PROFILE=default|paper|ci]: the paper's Figures 2-6 and
# Table 1, the whole-sphere accuracy against the direct sum, and a report
# against its published numbers.
#
#   1. runs each sweep of configs/<profile>/ (fig2, fig2fsht, fig4, fig5, fig6,
#      headline, exact)
#      with `arkcos run CONFIG --out results/<profile>/<fig>/ --resume`, so an
#      interrupted reproduce picks up where it stopped; Table 1 is drawn from
#      the Fig. 2 sweep's stage timers;
#   2. prints the Fig. 3 kernel profiles and K_l with build/tools/kernel_profile,
#      and measures narrow beams with build/tools/narrow_beams (error against
#      libsharp smoothing at 1 to 8 pixels per FWHM, with and without
#      --normalize; nside 64 for ci, 64 and 256 by default, up to 1024 for
#      paper) into results/<profile>/narrow/ (kept once complete);
#   3. renders plots/fig*.gp, plots/table1.gp with gnuplot into
#      plots/out/<profile>/<fig>.png and .pdf;
#   4. writes results/<profile>/REPORT.md.
# Steps 3 and 4 are `arkcos report --figures` (the data files plots/*.gp read,
# into plots/out/<profile>/data) and `arkcos report --paper` (the report
# against results/paper/published.json); no Python is needed.
#
# Environment: BUILD (build folder, default build), ARKCOS (the arkcos binary),
# KERNEL_PROFILE (the kernel_profile binary), NARROW_BEAMS (the narrow_beams binary),
# ARKCOS_RESULTS_DIR and ARKCOS_PLOTS_DIR (replace results/ and plots/out/),
# REPRODUCE_FIGS (a subset of "fig2 fig2fsht fig4 fig5 fig6 headline exact" to run; the
# others are only rendered and reported from what is already there).
# Exit status: 0 all done; 1 a case failed or a figure could not be drawn
# (everything else is still done); 2 bad usage or missing tools.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
profile=${1:-default}
case "$profile" in
  default|paper|ci) ;;
  *) echo "usage: scripts/reproduce.sh [default|paper|ci]" >&2; exit 2 ;;
esac
BUILD=${BUILD:-build}
ARKCOS=${ARKCOS:-$ROOT/$BUILD/arkcos}
KERNEL_PROFILE=${KERNEL_PROFILE:-$(dirname "$ARKCOS")/tools/kernel_profile}
NARROW_BEAMS=${NARROW_BEAMS:-$(dirname "$ARKCOS")/tools/narrow_beams}
RES=${ARKCOS_RESULTS_DIR:-$ROOT/results}/$profile
PLOTS=${ARKCOS_PLOTS_DIR:-$ROOT/plots/out}/$profile
PUBLISHED=$ROOT/results/paper/published.json
SWEEPS="fig2 fig2fsht fig4 fig5 fig6 headline exact"
RUN=${REPRODUCE_FIGS:-$SWEEPS}

for tool in "$ARKCOS" "$KERNEL_PROFILE" "$NARROW_BEAMS"; do
  [ -x "$tool" ] || { echo "reproduce: $tool not found; run make first" >&2; exit 2; }
done
command -v gnuplot >/dev/null || { echo "reproduce: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 2; }
[ -f "$PUBLISHED" ] || { echo "reproduce: $PUBLISHED missing" >&2; exit 2; }
mkdir -p "$RES" "$PLOTS"

status=0
say() { echo "[reproduce $profile] $*" >&2; }
t_all=$SECONDS
: >"$RES/walltimes.txt.tmp"

# 1. sweeps
for fig in $SWEEPS; do
  case " $RUN " in *" $fig "*) ;; *) continue ;; esac
  cfg=configs/$profile/$fig.json
  say "$fig: arkcos run $cfg --out $RES/$fig --resume"
  t0=$SECONDS
  "$ARKCOS" run "$cfg" --out "$RES/$fig" --resume | tee "$RES/.run-summary"
  rc=${PIPESTATUS[0]}
  # a sweep that only resumed (nothing left to run) keeps its earlier wall time
  grep -q ' 0 run now' "$RES/.run-summary" || echo "$fig $((SECONDS - t0))" >>"$RES/walltimes.txt.tmp"
  rm -f "$RES/.run-summary"
  case $rc in
    0) ;;
    1) say "$fig: a case failed (see the reason in $RES/$fig/results.json)"; status=1 ;;
    *) say "$fig: arkcos run refused (exit $rc); if the config changed, remove $RES/$fig and run again"
       status=1 ;;
  esac
done

# 2. Fig. 3: the accuracy tests' kernels, cut where they fall to 1e-8 of the
# peak as in configs/*/fig4.json and fig5.json (6' and 1 degree FWHM).
t0=$SECONDS
mkdir -p "$RES/fig3"
for f in 6 60; do
  if "$KERNEL_PROFILE" --fwhm-arcmin $f --cutoff-rel 1e-8 --lmax 8192 >"$RES/fig3/kernel_fwhm$f.txt.tmp"; then
    mv "$RES/fig3/kernel_fwhm$f.txt.tmp" "$RES/fig3/kernel_fwhm$f.txt"
  else
    say "fig3: kernel_profile failed for FWHM $f'"; status=1
  fi
done

# 2b. narrow beams (docs/NARROW_BEAMS.md): the Markdown table REPORT.md
# quotes, and its columns for plots/narrow.gp (nside, pixels per FWHM, error
# against fsht without and with --normalize, against the exact field
# without and with, constant map min and max, fsht against exact)
case $profile in
  ci) narrow_nsides="64" ;;
  paper) narrow_nsides="64 256 1024" ;;
  *) narrow_nsides="64 256" ;;
esac
if [ ! -s "$RES/narrow/narrow_beams.md" ]; then
  mkdir -p "$RES/narrow"
  say "narrow beams: narrow_beams at nside $narrow_nsides"
  args=()
  for n in $narrow_nsides; do args+=(--nside "$n"); done
  if "$NARROW_BEAMS" "${args[@]}" >"$RES/narrow/narrow_beams.md.tmp" &&
      awk -F'|' '/^\| [0-9]/ { printf "%s %s %s %s %s %s %s %s %s\n", $2, $3, $4, $5, $6, $7, $8, $9, $10 }' \
        "$RES/narrow/narrow_beams.md.tmp" >"$RES/narrow/narrow.dat.tmp" && [ -s "$RES/narrow/narrow.dat.tmp" ]; then
    mv "$RES/narrow/narrow.dat.tmp" "$RES/narrow/narrow.dat"
    mv "$RES/narrow/narrow_beams.md.tmp" "$RES/narrow/narrow_beams.md"
  else
    rm -f "$RES/narrow/narrow_beams.md.tmp" "$RES/narrow/narrow.dat.tmp"
    say "narrow beams: narrow_beams failed"; status=1
  fi
fi

# 3. figures
if ! "$ARKCOS" report --figures "$RES" "$PLOTS" >/dev/null; then
  say "could not extract the plot data"; status=1
fi
[ -s "$RES/narrow/narrow.dat" ] && cp "$RES/narrow/narrow.dat" "$PLOTS/data/narrow.dat"
for fig in fig2 table1 fig3 fig4 fig5 fig6 narrow; do
  for fmt in png pdf; do
    out=$PLOTS/$fig.$fmt
    if gnuplot -e "fmt='$fmt'; outfile='$out.tmp'; datadir='$PLOTS/data'" plots/$fig.gp \
        2>"$PLOTS/$fig.$fmt.log" && [ -s "$out.tmp" ]; then
      mv "$out.tmp" "$out"
      rm -f "$PLOTS/$fig.$fmt.log"
    else
      rm -f "$out.tmp"
      say "$fig.$fmt: gnuplot failed (see $PLOTS/$fig.$fmt.log)"; status=1
    fi
  done
done
echo "figures $((SECONDS - t0))" >>"$RES/walltimes.txt.tmp"
if [ -f "$RES/walltimes.txt" ]; then
  while read -r k v; do
    grep -q "^$k " "$RES/walltimes.txt.tmp" || echo "$k $v" >>"$RES/walltimes.txt.tmp"
  done <"$RES/walltimes.txt"
fi
mv "$RES/walltimes.txt.tmp" "$RES/walltimes.txt"

# 4. report
if "$ARKCOS" report --paper "$RES" "$PLOTS" "$PUBLISHED" "$profile" >/dev/null; then
  say "done in $((SECONDS - t_all)) s: $RES/REPORT.md, $PLOTS/"
else
  say "could not write $RES/REPORT.md"; status=1
fi
exit $status
