#!/usr/bin/env bash
# mpi_memory.sh -- per-rank memory of `arkcos smooth` with one map split over
# N ranks (docs/MPI.md, "Memory model"): for each nside, kernel and N, the
# prediction of `smooth --dry-run` and the peak resident memory of every rank
# measured by /usr/bin/time, with the halo pixels. Oversubscribed ranks on a
# small machine measure memory and traffic, not speed.
#
#   bash scripts/mpi_memory.sh [OUTDIR]     (default results/mpi-memory)
#
# Environment: NSIDES (default "1024 2048 4096"; empty: none), FWHM_PIX (kernel FWHMs in
# pixels, default "3 6"), RANKS (default "1 2 4"), THREADS per rank
# (default 1), SKIP (space-separated "nside:fwhm" pairs not to run),
# EXTRAPOLATE (nsides predicted only, default "8192 16384", with header-only
# sparse maps) over EXTRA_RANKS (default "1 4 16 64"), BUILD. The direct
# tables' budget is the node's (ARKCOS_DIRECT_MAX_GB, default half this
# machine's memory): set it to predict for other nodes.
# Writes OUTDIR/memory.csv (one line per rank), OUTDIR/memory.md and
# OUTDIR/extrapolated.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${1:-results/mpi-memory}
NSIDES=${NSIDES-"1024 2048 4096"}
FWHM_PIX=${FWHM_PIX:-"3 6"}
RANKS=${RANKS:-"1 2 4"}
THREADS=${THREADS:-1}
SKIP=${SKIP:-}
EXTRAPOLATE=${EXTRAPOLATE-"8192 16384"}
EXTRA_RANKS=${EXTRA_RANKS:-"1 4 16 64"}
PY=${PYTHON:-/usr/bin/python3}
BIN="$BUILD/arkcos-mpi"
[ -x "$BIN" ] || make mpi >/dev/null
command -v mpirun >/dev/null || { echo "mpi_memory: mpirun is not installed" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "mpi_memory: /usr/bin/time is needed (Debian package time)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT/maps" "$OUT/runs"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# one wisdom file for every run: the first run of an nside plans its FFTs
export ARKCOS_FFTW_WISDOM="$OUT/fftw-wisdom"
csv="$OUT/memory.csv"
[ -z "$NSIDES" ] ||
  echo "nside,fwhm_pix,fwhm_arcmin,cutoff_deg,ranks,rank,band,out_px,halo_px,pred_maps_mb,pred_tables_mb,pred_plan_mb,pred_total_mb,measured_mb" >"$csv"
for nside in $NSIDES; do
  map="$OUT/maps/n$nside.fits"
  if [ ! -s "$map" ]; then
    "$PY" - "$nside" "$map" <<'EOF'
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
n = int(sys.argv[1])
m = np.random.default_rng(n).normal(1.0, 1.0, 12 * n * n).astype(np.float32)
hp.write_map(sys.argv[2], m, dtype=np.float32, overwrite=True)
EOF
  fi
  for fp in $FWHM_PIX; do
    case " $SKIP " in *" $nside:$fp "*) continue ;; esac
    fwhm=$("$PY" -c "import math; print(f'{$fp * math.sqrt(4 * math.pi / (12 * $nside ** 2)) * 180 * 60 / math.pi:.6g}')")
    for n in $RANKS; do
      tag="n${nside}_f${fp}_r$n"
      args=(smooth "$map" "$WORK/out.fits" --fwhm-arcmin "$fwhm" --threads "$THREADS" --force -q --backend cpu)
      mpirun --oversubscribe -n "$n" "$BIN" "${args[@]}" --dry-run >"$OUT/runs/$tag.dry" 2>&1 ||
        { echo "mpi_memory: $tag: dry run failed: $(tail -2 "$OUT/runs/$tag.dry")" >&2; continue; }
      rm -f "$WORK"/rss.*
      mpirun --oversubscribe -x ARKCOS_FFTW_WISDOM -n "$n" sh -c \
        '/usr/bin/time -f %M -o "$0/rss.$OMPI_COMM_WORLD_RANK" "$@"' "$WORK" "$BIN" "${args[@]}" \
        >"$OUT/runs/$tag.log" 2>&1 || { echo "mpi_memory: $tag: run failed: $(tail -2 "$OUT/runs/$tag.log")" >&2; continue; }
      cutoff=$(grep -o 'cutoff=[0-9.e+-]*deg' "$OUT/runs/$tag.log" | head -1 | sed 's/cutoff=//; s/deg//')
      # the dry run's rows: rank host band rings out_px halo_px maps tables spectra other plan total
      awk -v nside="$nside" -v fp="$fp" -v fw="$fwhm" -v cut="$cutoff" -v n="$n" -v dir="$WORK" '
        $1 ~ /^[0-9]+$/ && NF == 12 {
          f = dir "/rss." $1; kb = ""; while ((getline line < f) > 0) kb = line; close(f)
          printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.1f\n", nside, fp, fw, cut, n, $1, $3, $5, $6, $7, $8, $11, $12, kb / 1024.0
        }' "$OUT/runs/$tag.dry" >>"$csv"
      echo "mpi_memory: $tag done"
    done
  done
done
# predictions beyond this machine: header-only maps (sparse files of the
# full size), `smooth --dry-run --ranks N` without mpirun
xcsv="$OUT/extrapolated.csv"
echo "nside,fwhm_pix,fwhm_arcmin,ranks,rank0_mb,max_other_mb,min_other_mb,max_halo_px,max_tables_mb" >"$xcsv"
for nside in $EXTRAPOLATE; do
  map="$OUT/maps/sparse$nside.fits"
  "$PY" - "$nside" "$map" <<'EOF'
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
n, path = int(sys.argv[1]), sys.argv[2]
hp.write_map(path, np.zeros(12 * 64 ** 2, np.float32), dtype=np.float32, overwrite=True)
b = bytearray(open(path, "rb").read()[:5760])
npix = 12 * n * n
def card(key, value):
    for i in range(0, len(b), 80):
        if b[i:i + 8].decode().rstrip() == key:
            b[i + 10:i + 30] = ("%20d" % value).encode()
            return
    raise SystemExit("no card " + key)
card("NAXIS2", npix // 1024)
card("NSIDE", n)
card("LASTPIX", npix - 1)
with open(path, "wb") as f:
    f.write(b)
    f.truncate(5760 + (npix * 4 + 2879) // 2880 * 2880)  # sparse: no data blocks written
EOF
  for fp in $FWHM_PIX; do
    fwhm=$("$PY" -c "import math; print(f'{$fp * math.sqrt(4 * math.pi / (12 * $nside ** 2)) * 180 * 60 / math.pi:.6g}')")
    for n in $EXTRA_RANKS; do
      "$BUILD/arkcos" smooth "$map" "$WORK/x.fits" --fwhm-arcmin "$fwhm" --threads "$THREADS" --backend cpu \
        --dry-run --ranks "$n" >"$OUT/runs/x${nside}_f${fp}_r$n.dry" 2>&1 || true # exit 1: not on this host
      awk -v nside="$nside" -v fp="$fp" -v fw="$fwhm" -v n="$n" '
        $1 ~ /^[0-9]+$/ && NF == 12 {
          if ($1 == 0) r0 = $12; else { if ($12 > mx) mx = $12; if (mn == "" || $12 < mn) mn = $12 }
          if ($6 > h) h = $6; if ($8 > tb) tb = $8
        }
        END { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s\n", nside, fp, fw, n, r0, mx + 0, mn + 0, h + 0, tb + 0 }' \
        "$OUT/runs/x${nside}_f${fp}_r$n.dry" >>"$xcsv"
    done
  done
  rm -f "$map"
done
[ -z "$EXTRAPOLATE" ] || cat "$xcsv"
# the table of docs/MPI.md
[ -s "$csv" ] || exit 0
"$PY" - "$csv" "$OUT/memory.md" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out = open(sys.argv[2], "w")
out.write("| nside | FWHM (px, arcmin) | R (deg) | N | per rank (rank: band) measured / predicted MB | halo px (rank 1) | max measured / predicted |\n")
out.write("| --- | --- | --- | --- | --- | --- | --- |\n")
groups = {}
for r in rows:
    groups.setdefault((int(r["nside"]), float(r["fwhm_pix"]), int(r["ranks"])), []).append(r)
for (nside, fp, n), rs in sorted(groups.items()):
    rs.sort(key=lambda r: int(r["rank"]))
    cells = ", ".join(f'{r["rank"]}:{r["band"]} {float(r["measured_mb"]):.0f} / {float(r["pred_total_mb"]):.0f}' for r in rs)
    halo = rs[1]["halo_px"] if len(rs) > 1 else "0"
    worst = max(float(r["measured_mb"]) / float(r["pred_total_mb"]) for r in rs)
    out.write(f'| {nside} | {fp:g}, {float(rs[0]["fwhm_arcmin"]):.3g} | {rs[0]["cutoff_deg"]} | {n} | {cells} | {halo} | {worst:.2f} |\n')
out.close()
print(open(sys.argv[2]).read())
EOF
