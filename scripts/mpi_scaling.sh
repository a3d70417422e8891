#!/usr/bin/env bash
# mpi_scaling.sh -- strong scaling of one map split over MPI ranks
# (docs/MPI.md): the same maps smoothed by 1, 2, ... ranks of one thread
# each (`mpirun -n N arkcos smooth --mpi-split`), against one process with
# as many threads, in rounds that interleave the configurations; per
# configuration the median time per map (the summary line's per-map median,
# scatter and gather included), the plan time, and the stage "other" (in
# split runs rank 0's sends and its wait for the slowest band). Run it on a machine with
# at least max(RANKS) cores: ranks sharing cores measure nothing.
#
#   bash scripts/mpi_scaling.sh [OUTDIR]     (default results/mpi-scaling)
#
# Environment: NSIDE (default 2048), FWHM_PIX (default 3), RANKS (default
# "1 2"; e.g. "1 2 4 8 16" on 16 cores), MAPS per run (default 5), ROUNDS
# (default 3), BUILD. Writes OUTDIR/scaling.csv and prints a table.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${1:-results/mpi-scaling}
NSIDE=${NSIDE:-2048}
FWHM_PIX=${FWHM_PIX:-3}
RANKS=${RANKS:-"1 2"}
MAPS=${MAPS:-5}
ROUNDS=${ROUNDS:-3}
PY=${PYTHON:-/usr/bin/python3}
BIN="$BUILD/arkcos-mpi"
[ -x "$BIN" ] || make mpi >/dev/null
command -v mpirun >/dev/null || { echo "mpi_scaling: mpirun is not installed" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export ARKCOS_FFTW_WISDOM="$OUT/fftw-wisdom"
"$PY" - "$NSIDE" "$WORK/m.fits" <<'EOF'
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
n = int(sys.argv[1])
hp.write_map(sys.argv[2], np.random.default_rng(n).normal(1.0, 1.0, 12 * n * n), dtype=np.float64)
EOF
maps=()
for i in $(seq "$MAPS"); do ln -s "$WORK/m.fits" "$WORK/m$i.fits"; maps+=("$WORK/m$i.fits"); done
fwhm=$("$PY" -c "import math; print(f'{$FWHM_PIX * math.sqrt(4 * math.pi / (12 * $NSIDE ** 2)) * 180 * 60 / math.pi:.6g}')")
K=(--fwhm-arcmin "$fwhm" --force -q --backend cpu)
"$BIN" smooth "${maps[0]}" "$WORK/warm.fits" "${K[@]}" >/dev/null # settles the wisdom file
csv="$OUT/scaling.csv"
echo "round,config,ranks,threads,per_map_median_s,plan_s,rank0_other_median_s" >"$csv"
# one line "smooth: N maps in F file(s), P plan(s) in Xs; per map: mean .. median Ys .."
# and the median over the maps of "other" (split runs: rank 0's sends, and its wait for the slowest band)
parse() {
  local a o
  a=$(sed -n 's/.*plan(s) in \([0-9.e+-]*\)s; per map: mean [0-9.e+-]*s median \([0-9.e+-]*\)s.*/\2,\1/p' "$1" | head -1)
  o=$(grep -o ' other [0-9.e+-]*)' "$1" | tr -d ')' | awk '{print $2}' | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
  echo "$a,$o"
}
for round in $(seq "$ROUNDS"); do
  for n in $RANKS; do
    # the previous run's outputs flushed first: their writeback would take a core from this run
    rm -rf "$WORK/o"; sync
    mpirun --oversubscribe --stdin none -x ARKCOS_FFTW_WISDOM -x OMP_NUM_THREADS=1 -n "$n" "$BIN" smooth --mpi-split \
      "${maps[@]}" "$WORK/o/" "${K[@]}" --threads 1 >"$WORK/r.log" 2>&1 ||
      { echo "mpi_scaling: $n ranks failed: $(tail -3 "$WORK/r.log")" >&2; exit 1; }
    echo "$round,ranks,$n,1,$(parse "$WORK/r.log")" >>"$csv"
    rm -rf "$WORK/o"; sync
    "$BIN" smooth "${maps[@]}" "$WORK/o/" "${K[@]}" --threads "$n" >"$WORK/t.log" 2>&1 ||
      { echo "mpi_scaling: $n threads failed: $(tail -3 "$WORK/t.log")" >&2; exit 1; }
    echo "$round,threads,1,$n,$(parse "$WORK/t.log")" >>"$csv"
  done
done
"$PY" - "$csv" "$NSIDE" "$FWHM_PIX" "$fwhm" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"nside {sys.argv[2]}, FWHM {sys.argv[3]} px ({float(sys.argv[4]):.3g}'), medians over rounds; "
      "speedup against one process of one thread")
print(f"{'config':>8} {'ranks':>5} {'threads':>7} {'s/map':>9} {'speedup':>8} {'plan s':>8} {'other s':>8}")
groups = {}
for r in rows:
    groups.setdefault((r["config"], int(r["ranks"]), int(r["threads"])), []).append(r)
base = statistics.median(float(r["per_map_median_s"]) for r in groups[("threads", 1, 1)])
for (cfg, n, t), rs in sorted(groups.items(), key=lambda kv: (kv[0][1] * kv[0][2], kv[0][0])):
    s = statistics.median(float(r["per_map_median_s"]) for r in rs)
    p = statistics.median(float(r["plan_s"]) for r in rs)
    o = statistics.median(float(r["rank0_other_median_s"]) for r in rs)
    print(f"{cfg:>8} {n:>5} {t:>7} {s:>9.4f} {base / s:>8.2f} {p:>8.2f} {o:>8.3f}")
EOF
