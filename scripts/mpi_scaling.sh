#!/usr/bin/env bash
# mpi_scaling.sh -- strong scaling of one map split over MPI ranks x threads
# (docs/MPI.md): the same maps smoothed by each configuration R x T (R ranks
# of T threads; R = 1 is one process, without mpirun), in rounds that
# interleave the configurations. Split runs use `--mpi-split`: every rank
# reads its band and halo and writes its band's pixels itself (parallel
# I/O), bands cut by the cost model. Per configuration: the median time per
# map of the smoothing (the summary line's per-map median; over ranks, the
# slowest band), the wall time per map of the whole run (start, reading,
# planning, smoothing, writing, over MAPS maps), the plan time, and rank 0's
# read and write seconds per map. Run it where there are R x T cores for
# every configuration: ranks or threads sharing cores measure nothing.
#
#   bash scripts/mpi_scaling.sh [OUTDIR]     (default results/mpi-scaling)
#
# Environment: NSIDE (default 2048), FWHM_PIX (default 3), CONFIGS (default
# "1x1 2x1 1x2"; e.g. "1x1 16x1 4x4 2x8 1x16" on 16 cores), MAPS per run
# (default 5), ROUNDS (default 3), BUILD. Writes OUTDIR/scaling.csv and
# prints a table.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${1:-results/mpi-scaling}
NSIDE=${NSIDE:-2048}
FWHM_PIX=${FWHM_PIX:-3}
CONFIGS=${CONFIGS:-"1x1 2x1 1x2"}
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
echo "round,ranks,threads,per_map_median_s,wall_per_map_s,plan_s,read_s,write_s" >"$csv"
# "smooth: N maps in F file(s), P plan(s) in Xs; per map: mean .. median Ys .." and the
# medians of the summary lines' read= and write=
median_of() { grep -o " $1=[0-9.e+-]*s" "$2" | tr -d 's' | cut -d= -f2 | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
parse() {
  local a
  a=$(sed -n 's/.*plan(s) in \([0-9.e+-]*\)s; per map: mean [0-9.e+-]*s median \([0-9.e+-]*\)s.*/\2,\1/p' "$1" | head -1)
  echo "$a,$(median_of read "$1"),$(median_of write "$1")"
}
for round in $(seq "$ROUNDS"); do
  for cfg in $CONFIGS; do
    n=${cfg%x*} t=${cfg#*x}
    # the previous run's outputs flushed first: their writeback would take a core from this run
    rm -rf "$WORK/o"; sync
    t0=$(date +%s.%N)
    if [ "$n" = 1 ]; then
      "$BIN" smooth "${maps[@]}" "$WORK/o/" "${K[@]}" --threads "$t" >"$WORK/r.log" 2>&1
    else
      mpirun --oversubscribe --stdin none -x ARKCOS_FFTW_WISDOM -x OMP_NUM_THREADS="$t" -n "$n" "$BIN" smooth \
        --mpi-split "${maps[@]}" "$WORK/o/" "${K[@]}" --threads "$t" >"$WORK/r.log" 2>&1
    fi || { echo "mpi_scaling: $cfg failed: $(tail -3 "$WORK/r.log")" >&2; exit 1; }
    wall=$("$PY" -c "print(($(date +%s.%N) - $t0) / $MAPS)")
    echo "$round,$n,$t,$(parse "$WORK/r.log" | tr -d '\n'),$wall" |
      awk -F, -v OFS=, '{print $1, $2, $3, $4, $8, $5, $6, $7}' >>"$csv"
  done
done
"$PY" - "$csv" "$NSIDE" "$FWHM_PIX" "$fwhm" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"nside {sys.argv[2]}, FWHM {sys.argv[3]} px ({float(sys.argv[4]):.3g}'), medians over rounds; "
      "speedup against one process of one thread")
print(f"{'ranks':>5} {'threads':>7} {'s/map':>8} {'speedup':>8} {'wall s/map':>10} {'speedup':>8} {'plan s':>7} "
      f"{'read s':>7} {'write s':>7}")
groups = {}
for r in rows:
    groups.setdefault((int(r["ranks"]), int(r["threads"])), []).append(r)
med = lambda rs, k: statistics.median(float(r[k]) for r in rs)
base = groups.get((1, 1))
b1, b2 = (med(base, "per_map_median_s"), med(base, "wall_per_map_s")) if base else (float("nan"),) * 2
for (n, t), rs in sorted(groups.items(), key=lambda kv: (kv[0][0] * kv[0][1], -kv[0][0])):
    s, w = med(rs, "per_map_median_s"), med(rs, "wall_per_map_s")
    print(f"{n:>5} {t:>7} {s:>8.4f} {b1 / s:>8.2f} {w:>10.4f} {b2 / w:>8.2f} {med(rs, 'plan_s'):>7.2f} "
          f"{med(rs, 'read_s'):>7.3f} {med(rs, 'write_s'):>7.3f}")
EOF
