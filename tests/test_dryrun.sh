#!/usr/bin/env bash
# test_dryrun.sh -- `arkcos smooth --dry-run` (docs/MPI.md, "Memory"): the
# checks of a run, then each rank's predicted memory, with nothing read,
# planned or written; the prediction held against the peak resident memory
# of the run it predicts (one process here; ranks in test_mpi.sh); a host
# without the memory refused (exit 1); misuse refused (exit 2).
# Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh dryrun
K=(--fwhm-arcmin 40 --threads 1 -q)

if ! "$PYTHON" - "$T" <<'PY'
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
d = sys.argv[1]
rng = np.random.default_rng(3)
hp.write_map(f"{d}/m256.fits", rng.normal(1.0, 1.0, 12 * 256 ** 2), dtype=np.float64)
hp.write_map(f"{d}/m512.fits", rng.normal(1.0, 1.0, 12 * 512 ** 2), dtype=np.float64)
th, _ = hp.pix2ang(256, np.arange(12 * 256 ** 2))
hp.write_map(f"{d}/mask256.fits", (np.abs(th - np.pi / 2) > 0.2).astype(np.float64), dtype=np.float64)
hp.write_map(f"{d}/iqu64.fits", [rng.normal(size=12 * 64 ** 2) for _ in range(3)], dtype=np.float64,
             column_names=["I_STOKES", "Q_STOKES", "U_STOKES"])
hp.write_map(f"{d}/iqu256.fits", [rng.normal(size=12 * 256 ** 2) for _ in range(3)], dtype=np.float64,
             column_names=["I_STOKES", "Q_STOKES", "U_STOKES"])
PY
then bad "fixtures (healpy)"; echo "TESTS $pass $fail"; exit 1; fi

# rows of the table: rank host band rings out_px halo_px maps tables spectra other plan total
rows() { awk '$1 ~ /^[0-9]+$/ && NF == 12' "$1"; }

# ---- one process: the prediction, nothing written
"$ARKCOS" smooth "$T/m256.fits" "$T/new/" "${K[@]}" --dry-run >"$T/d1.out" 2>"$T/d1.err"
rc=$?
[ $rc -eq 0 ] && ok || bad "--dry-run: exit $rc: $(cat "$T/d1.err")"
[ "$(rows "$T/d1.out" | wc -l)" = 1 ] && ok || bad "--dry-run: one rank row expected: $(cat "$T/d1.out")"
grep -q "rank(s) need about .* GB together; .* GB available now: fits" "$T/d1.out" && ok || bad "--dry-run: no verdict: $(cat "$T/d1.out")"
[ ! -e "$T/new" ] && ok || bad "--dry-run created the output folder"
sed 's/^/  /' "$T/d1.out"

# the missing pixels it cannot see, said (nside 256: 2 maps of 6.3 MB)
grep -q "missing pixels, UNSEEN or NaN, adds up to 13 MB" "$T/d1.out" && ok ||
  bad "--dry-run: no word on maps with missing pixels: $(cat "$T/d1.out")"
# one map with --mask: its weights on the fly as without (A(w) smoothed with
# the map in one call, arkcos_execute_two); so do five maps (the tables'
# build pays from about five), six maps tabulate them
tabl() { rows "$1" | awk '{print $8}'; }
"$ARKCOS" smooth "$T/m256.fits" "$T/om.fits" "${K[@]}" --mask "$T/mask256.fits" --dry-run >"$T/dm.out" 2>&1
for c in b c d e f; do cp "$T/m256.fits" "$T/m256$c.fits"; done
"$ARKCOS" smooth "$T/m256.fits" "$T"/m256[b-e].fits "$T/o5/" "${K[@]}" --dry-run >"$T/d5m.out" 2>&1
"$ARKCOS" smooth "$T/m256.fits" "$T"/m256[b-f].fits "$T/o6/" "${K[@]}" --dry-run >"$T/d6m.out" 2>&1
awk -v a="$(tabl "$T/dm.out")" -v b="$(tabl "$T/d1.out")" -v c="$(tabl "$T/d5m.out")" -v d="$(tabl "$T/d6m.out")" \
  'BEGIN {exit !(a == b && b == c && c + 0 < d + 0)}' && ok ||
  bad "tables_MB: one map with --mask $(tabl "$T/dm.out"), without $(tabl "$T/d1.out"), five maps $(tabl "$T/d5m.out"), six $(tabl "$T/d6m.out")"
rm -f "$T"/m256[b-f].fits

# the prediction against the run: the peak resident memory of the process
# (measured 55 MB against 62 MB predicted at nside 256, FWHM 40'); not
# under AddressSanitizer (make sanitize), whose shadow memory is not ours
if [ -n "${ASAN_OPTIONS:-}" ]; then
  echo "  skip: peak memory under AddressSanitizer"
else
# peak LABEL DRYRUN_OUT RSS_FILE LIMIT ARGS...: run ARGS (arkcos smooth), its
# peak held against the prediction in DRYRUN_OUT: measured / predicted <= 1,
# predicted / measured <= LIMIT
peak() {
  local label=$1 dry=$2 rss=$3 lim=$4
  shift 4
  "$PYTHON" tests/peak_rss.py "$rss" "$ARKCOS" smooth "$@" >/dev/null 2>&1 && ok || bad "$label: the run --dry-run predicts failed"
  local pred meas
  pred=$(rows "$dry" | awk '{print $12}')
  meas=$(awk '{printf "%.1f", $1 / 1024}' "$rss")
  check_le "$label: measured MB / predicted MB" "$("$PYTHON" -c "print(round($meas / $pred, 3))")" 1.0
  check_le "$label: predicted MB / measured MB" "$("$PYTHON" -c "print(round($pred / $meas, 3))")" "$lim"
}
# measured 1.102-1.105 (1.13 while A(W) was held as a map; 1.08-1.10 at nside 256-2048 for
# 2.8 px, 1-2 deg beams and 2-deg top-hats, 2 threads)
peak "nside 256, one process" "$T/d1.out" "$T/rss1" 1.15 "$T/m256.fits" "$T/o1.fits" "${K[@]}"
# the harmonic path (a 2 deg beam at nside 512: a_lm and libsharp's work
# arrays, no tables or spectra): measured 80.4 MB against 89.2 predicted
# (1.11; 1.19 while libsharp's arrays were counted at 20 kB per l; 1.04-1.06
# at nside 1024-2048); no A(W) held at 17 pixels per FWHM
H=(--fwhm-arcmin 120 --threads 1 -q)
"$ARKCOS" smooth "$T/m512.fits" "$T/oh.fits" "${H[@]}" --dry-run >"$T/dh.out" 2>&1 || bad "harmonic --dry-run: $(cat "$T/dh.out")"
peak "nside 512, 2 deg (harmonic)" "$T/dh.out" "$T/rssh" 1.15 "$T/m512.fits" "$T/oh.fits" "${H[@]}"
# smooth caps (5 pixels per FWHM at nside 512, cut at 1e-13: ring spectra
# in a window per thread, arkcos_spectra_window): measured 1.025-1.076
# (1.02-1.03 at nside 1024 and 2048; 1.079 while every ring had a row)
S=(--fwhm-arcmin 34.35 --threads 2 -q)
"$ARKCOS" smooth "$T/m512.fits" "$T/os.fits" "${S[@]}" --dry-run >"$T/ds.out" 2>&1 || bad "smooth caps --dry-run: $(cat "$T/ds.out")"
peak "nside 512, 5 px (smooth caps)" "$T/ds.out" "$T/rsss" 1.1 "$T/m512.fits" "$T/os.fits" "${S[@]}"
# I, Q, U at 1 deg (4.4 px/FWHM): the polar reconstructions of both spins
# counted (Q and U's 18 MB of complex factors were not: measured 1.006 of
# the prediction at nside 512; now 79.5 MB against 88.1 predicted, 1.108)
Q=(--fwhm-arcmin 60 --threads 1 -q)
"$ARKCOS" smooth "$T/iqu256.fits" "$T/oq256.fits" "${Q[@]}" --dry-run >"$T/dq256.out" 2>&1 || bad "I, Q, U --dry-run: $(cat "$T/dq256.out")"
peak "nside 256, I, Q, U (both spins' polar)" "$T/dq256.out" "$T/rssq" 1.15 "$T/iqu256.fits" "$T/oq256.fits" "${Q[@]}"
fi

# ---- four ranks predicted without mpirun: bands cover the map, rank 0 (the files) at the equator
"$ARKCOS" smooth "$T/m256.fits" "$T/o4.fits" "${K[@]}" --dry-run --ranks 4 >"$T/d4.out" 2>"$T/d4.err"
rc=$?
[ $rc -eq 0 ] && ok || bad "--dry-run --ranks 4: exit $rc: $(cat "$T/d4.err")"
[ "$(rows "$T/d4.out" | awk '{print $1 ":" $3}' | tr '\n' ' ')" = "0:3 1:0 2:1 3:2 " ] && ok ||
  bad "--ranks 4: ranks and bands: $(rows "$T/d4.out" | awk '{print $1 ":" $3}' | tr '\n' ' ')"
[ "$(rows "$T/d4.out" | awk '{s += $5} END {print s}')" = 786432 ] && ok || bad "--ranks 4: bands do not cover the 786432 pixels"
rows "$T/d4.out" | awk '$1 == 0 && $8 == "0.0" {z = 1} $1 == 1 && $8 + 0 > 0 {t = 1} END {exit !(z && t)}' && ok ||
  bad "--ranks 4: rank 0 should hold no tables, rank 1 (the poles) should: $(rows "$T/d4.out")"
grep -q "built without MPI" "$T/d4.out" && ok || bad "--ranks 4: the note that this build has no MPI is missing"
[ ! -e "$T/o4.fits" ] && ok || bad "--dry-run --ranks 4 wrote its output"
# Stokes Q and U: the spin-2 plan counted on the rank that reads the files
"$ARKCOS" smooth "$T/iqu64.fits" "$T/oq.fits" --fwhm-arcmin 200 --dry-run >"$T/dq.out" 2>&1 &&
  grep -q "files of up to 3 column(s) (Q, U as spin 2)" "$T/dq.out" && ok || bad "I Q U: $(cat "$T/dq.out")"

# ---- a host without the memory: refused, exit 1, the figures named, nothing written
# (the run's plan, its direct weights on the fly for one map and its ring
# spectra in a window per thread, needs 3.1 MB)
ARKCOS_MEMORY_GB=0.002 "$ARKCOS" smooth "$T/m256.fits" "$T/o5.fits" "${K[@]}" --dry-run >"$T/d5.out" 2>"$T/d5.err"
rc=$?
[ $rc -eq 1 ] && grep -q "would need about .* GB together .* but 0.002 GB are available there now" "$T/d5.err" && ok ||
  bad "a host without the memory: exit $rc: $(cat "$T/d5.err")"
grep -q "does not fit" "$T/d5.out" && ok || bad "no 'does not fit' verdict: $(cat "$T/d5.out")"
ARKCOS_MEMORY_GB=0.002 "$ARKCOS" smooth "$T/m256.fits" "$T/o5.fits" "${K[@]}" >"$T/r5.out" 2>"$T/r5.err"
rc=$?
[ $rc -eq 1 ] && grep -q "would need about" "$T/r5.err" && [ ! -e "$T/o5.fits" ] && ok ||
  bad "a run without the memory: exit $rc: $(cat "$T/r5.err")"
"$ARKCOS" smooth "$T/m256.fits" "$T/o6.fits" "${K[@]}" --dry-run --ranks 2 --max-memory 2M >"$T/d6.out" 2>"$T/d6.err"
rc=$?
# (the rank named is the one whose plan needs the most: with the direct
# weights on the fly for one map, rank 1's band, 3.1 MB)
[ $rc -eq 1 ] && grep -q "rank [0-9]'s plan would need about .* but --max-memory allows" "$T/d6.err" && ok ||
  bad "--max-memory per rank: exit $rc: $(cat "$T/d6.err")"

# ---- misuse: exit 2, nothing written
expect_refused "--ranks without --dry-run" "--ranks applies only to --dry-run" "$T/o7.fits" \
  "$T/m256.fits" "$T/o7.fits" "${K[@]}" --ranks 2
expect_refused "--ranks 0" "--ranks: must be >= 1, got '0'" "$T/o7.fits" \
  "$T/m256.fits" "$T/o7.fits" "${K[@]}" --dry-run --ranks 0
expect_refused "--dry-run with fsht" "--dry-run predicts the memory of --method arkcos" "$T/o7.fits" \
  "$T/m256.fits" "$T/o7.fits" "${K[@]}" --dry-run --method fsht
expect_refused "--dry-run, a missing input" "nope.fits" "$T/o7.fits" \
  "$T/nope.fits" "$T/o7.fits" "${K[@]}" --dry-run
: >"$T/o8.fits"
expect_refused "--dry-run, an existing output" "output exists" "$T/o9.fits" \
  "$T/m256.fits" "$T/o8.fits" "${K[@]}" --dry-run
echo "TESTS $pass $fail"
