#!/usr/bin/env bash
# test_mpi.sh -- arkcos under MPI (docs/MPI.md), with `mpirun --oversubscribe
# -n 1..4` at nside <= 64. Uses $ARKCOS when it was built with MPI (make
# MPI=1), else builds $BUILD/arkcos-mpi (make mpi); prints a skip line where
# OpenMPI (mpicc, mpirun) is not installed.
#
#  1. the API: tests/mpi_plan_check.c, arkcos_plan_create_mpi against one
#     process byte for byte, N = 1..4, eight plans;
#  2. many maps: `mpirun -n N arkcos smooth a.fits b.fits ... OUT/` writes
#     files identical (cmp) to those of the plain single-process binary;
#  3. one map over ranks (a single input, or --mpi-split): RING, NESTED,
#     float32, UNSEEN pixels, I Q U, identical to one process for N = 2..4;
#  4. failures: a bad input (exit 2) and a truncated one that fails while
#     being read on one rank (exit 1): every rank stops, the message once.
# Fixtures are written with healpy. Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh mpi
BUILD="${BUILD:-build}"
PLAIN="$PWD/$BUILD/arkcos"

if ! command -v mpirun >/dev/null || ! command -v mpicc >/dev/null; then
  echo "skip: OpenMPI is not installed (mpicc, mpirun; scripts/install-deps.sh installs it)"
  echo "TESTS 0 0"; exit 0
fi
if ! make -s BUILD="$BUILD" mpi >"$T/make.log" 2>&1; then
  cat "$T/make.log"; bad "make mpi failed"; echo "TESTS $pass $fail"; exit 1
fi
MPIBIN="$PWD/$BUILD/arkcos-mpi"
ldd "$ARKCOS" 2>/dev/null | grep -q libmpi && MPIBIN="$ARKCOS"
[ "$(ldd "$PLAIN" 2>/dev/null | grep -c libmpi)" = 0 ] || PLAIN="$MPIBIN"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# one wisdom file for every process of this test (docs/MPI.md: bit-identity
# holds for FFTs of the same algorithms)
export ARKCOS_FFTW_WISDOM="$T/fftw-wisdom" OMP_NUM_THREADS=1
run() { mpirun --oversubscribe -x ARKCOS_FFTW_WISDOM -x OMP_NUM_THREADS -n "$@"; }

# ---- 1. the API
for n in 1 2 3 4; do
  run "$n" "$BUILD/tests/mpi_plan_check" >"$T/api$n.log" 2>&1
  rc=$?
  line=$(grep -E '^TESTS [0-9]+ [0-9]+$' "$T/api$n.log" | tail -1)
  if [ -z "$line" ] || [ $rc -ne 0 ]; then
    bad "mpi_plan_check -n $n: exit $rc"; grep -E '^FAIL' "$T/api$n.log" | head; tail -3 "$T/api$n.log"
  else
    set -- $line; pass=$((pass + $2)); fail=$((fail + $3))
    grep -E '^FAIL' "$T/api$n.log" | head
  fi
done
grep -E "gauss nside 64 cached" "$T/api4.log" | sed 's/^/ /'

# ---- fixtures
mkdir -p "$T/in"
if ! "$PYTHON" - "$T/in" <<'EOF'
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
d = sys.argv[1]
rng = np.random.default_rng(5)
def sky(nside):
    return rng.normal(1.0, 1.0, 12 * nside ** 2)
hp.write_map(f"{d}/a_ring.fits", sky(32), dtype=np.float64)
hp.write_map(f"{d}/b_nest.fits", hp.reorder(sky(32), r2n=True), nest=True, dtype=np.float64)
hp.write_map(f"{d}/c_f32.fits", sky(32).astype(np.float32), dtype=np.float32)
m = sky(32); m[rng.integers(0, m.size, 300)] = hp.UNSEEN
hp.write_map(f"{d}/d_unseen.fits", m, dtype=np.float64)
hp.write_map(f"{d}/e_iqu.fits", [sky(16), sky(16) - 1, sky(16) - 1], dtype=np.float64,
             column_names=["I_STOKES", "Q_STOKES", "U_STOKES"])
hp.write_map(f"{d}/f_n16.fits", sky(16), dtype=np.float64)
EOF
then bad "fixtures (healpy)"; echo "TESTS $pass $fail"; exit 1; fi
maps=("$T"/in/*.fits)
K=(--fwhm-arcmin 500 --threads 1)

# ---- 2. many maps over ranks: the plain binary's files, byte for byte
# (a first run settles the wisdom file: FFTW_ESTIMATE plans take the
# algorithms of measured wisdom where there is some, docs/MPI.md)
"$PLAIN" smooth "${maps[@]}" "$T/warm/" "${K[@]}" >/dev/null 2>&1
"$PLAIN" smooth "${maps[@]}" "$T/one/" "${K[@]}" >"$T/one.log" 2>&1 || bad "single-process smooth: $(tail -2 "$T/one.log")"
for n in 2 4; do
  run "$n" "$MPIBIN" smooth "${maps[@]}" "$T/many$n/" "${K[@]}" >"$T/many$n.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && ok || bad "mpirun -n $n smooth ${#maps[@]} maps: exit $rc: $(tail -3 "$T/many$n.log")"
  for f in "${maps[@]}"; do
    b=$(basename "$f")
    cmp -s "$T/one/$b" "$T/many$n/$b" && ok || bad "-n $n: $b differs from the single-process output"
  done
  c=$(grep -c '^smooth: .* -> ' "$T/many$n.log")
  [ "$c" = "${#maps[@]}" ] && ok || bad "-n $n: $c summary lines for ${#maps[@]} maps"
done

# ---- 3. one map over ranks
for f in a_ring b_nest c_f32 d_unseen e_iqu; do
  for n in 2 3 4; do
    [ $n = 3 ] && [ $f != a_ring ] && [ $f != b_nest ] && continue
    run "$n" "$MPIBIN" smooth "$T/in/$f.fits" "$T/split_${f}_$n.fits" "${K[@]}" >"$T/split.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] && ok || bad "mpirun -n $n smooth $f: exit $rc: $(tail -3 "$T/split.log")"
    cmp -s "$T/one/$f.fits" "$T/split_${f}_$n.fits" && ok || bad "one map over $n ranks: $f differs"
  done
done
run 3 "$MPIBIN" smooth --mpi-split "$T/in/a_ring.fits" "$T/in/f_n16.fits" "$T/split3/" "${K[@]}" >"$T/split3.log" 2>&1 \
  && ok || bad "--mpi-split with two maps: $(tail -3 "$T/split3.log")"
for b in a_ring f_n16; do
  cmp -s "$T/one/$b.fits" "$T/split3/$b.fits" && ok || bad "--mpi-split over 3 ranks: $b differs"
done
"$PLAIN" smooth --mpi-split "$T/in/a_ring.fits" "$T/x.fits" "${K[@]}" >"$T/x.log" 2>&1
rc=$?
if ldd "$PLAIN" | grep -q libmpi; then ok
else [ $rc -eq 2 ] && grep -q "built without MPI" "$T/x.log" && ok || bad "--mpi-split without MPI: exit $rc"; fi

# ---- 4. failures: every rank's exit status, the message once
echo "not a fits file" >"$T/in/z_bad.fits"
run 3 "$MPIBIN" smooth "${maps[@]}" "$T/in/z_bad.fits" "$T/bad/" "${K[@]}" >"$T/bad.log" 2>&1
rc=$?
c=$(grep -c "z_bad.fits" "$T/bad.log")
[ $rc -ne 0 ] && [ "$c" = 1 ] && ok || bad "a bad input under -n 3: exit $rc, message $c times: $(head -3 "$T/bad.log")"
[ ! -e "$T/bad/a_ring.fits" ] && ok || bad "a bad input: outputs were written"
rm -f "$T/in/z_bad.fits"
head -c 20000 "$T/in/a_ring.fits" >"$T/in/y_cut.fits" # header intact, data cut short
run 2 "$MPIBIN" smooth "$T/in/b_nest.fits" "$T/in/f_n16.fits" "$T/in/y_cut.fits" "$T/cut/" "${K[@]}" >"$T/cut.log" 2>&1
rc=$?
c=$(grep -c "y_cut.fits:" "$T/cut.log")
[ $rc -ne 0 ] && [ "$c" -ge 1 ] && ok || bad "a truncated input under -n 2: exit $rc: $(tail -3 "$T/cut.log")"
grep -q "mpirun detected that one or more processes exited with non-zero status" "$T/cut.log" && ok ||
  bad "the ranks' statuses: $(tail -5 "$T/cut.log")"

echo "TESTS $pass $fail"
