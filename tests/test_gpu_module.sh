#!/usr/bin/env bash
# test_gpu_module.sh -- the CUDA backend as a module loaded when first asked
# for (arkcos/gpu_module.h): a build with CUDA links neither libcufft nor
# libcudart into arkcos, smooths on the CPU in an address space too small
# for the CUDA libraries (a binary linked with them did not start under
# `ulimit -v` of 60-300 MB), and names the reason when the module cannot be
# loaded: `--backend gpu` exits 2, `arkcos info` and AUTO fall back to the
# CPU. A build without CUDA prints a skip line. Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh gpu-module
BUILD="${BUILD:-build}"
MOD="$BUILD/libarkcos_gpu.so.1"
if ! grep -q -- '-DARKCOS_WITH_CUDA' < <("$ARKCOS" info 2>/dev/null); then
  echo "skip: arkcos was built without CUDA (no GPU module to load)"
  echo "TESTS 0 0"; exit 0
fi
[ -f "$MOD" ] && ok || bad "no $MOD beside the build"

# linked without the CUDA libraries; the module exports its init alone
if ldd "$ARKCOS" | grep -qE 'libcufft|libcudart'; then bad "arkcos links the CUDA libraries"; else ok; fi
syms=$(nm -D --defined-only "$MOD" 2>/dev/null | awk '$2 == "T" {print $3}' | tr '\n' ' ')
[ "$syms" = "arkcos_gpu_module_init " ] && ok || bad "the module exports: $syms"

"$PYTHON" - "$T" <<'EOF2' || { bad "cannot write the fixture with $PYTHON (healpy needed)"; echo "TESTS $pass $fail"; exit 1; }
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
hp.write_map(f"{sys.argv[1]}/a.fits", np.random.default_rng(5).standard_normal(12 * 32 ** 2),
             dtype=np.float64)
EOF2
K=(--fwhm-arcmin 400 --threads 1)  # 3.6 pixels per FWHM at nside 32

# 150 MB of address space: the CPU path runs (libcufft alone maps more)
( ulimit -v 150000; "$ARKCOS" smooth "$T/a.fits" "$T/small.fits" "${K[@]}" >/dev/null 2>"$T/small.err" )
rc=$?
[ $rc -eq 0 ] && [ -f "$T/small.fits" ] && ok || { bad "smooth under ulimit -v 150000: exit $rc"; cat "$T/small.err"; }
( ulimit -v 150000; "$ARKCOS" smooth "$T/a.fits" "$T/small-gpu.fits" "${K[@]}" --backend gpu >/dev/null 2>"$T/small-gpu.err" )
rc=$?
[ $rc -eq 2 ] && [ ! -e "$T/small-gpu.fits" ] && ok || bad "--backend gpu under ulimit -v: exit $rc, expected 2"
grep -q 'backend gpu' "$T/small-gpu.err" && ok || bad "--backend gpu under ulimit -v: $(cat "$T/small-gpu.err")"

# no NVIDIA driver (libcuda.so.1 not loadable): AUTO takes the CPU without
# loading the module (cuFFT and the runtime cost about 10 ms and 9 MB of a
# one-call process), and says why
if "$ARKCOS" info 2>/dev/null | grep -q '^backend .*no NVIDIA driver: libcuda.so.1'; then
  LD_DEBUG=files "$ARKCOS" smooth "$T/a.fits" "$T/nodrv.fits" "${K[@]}" >/dev/null 2>"$T/nodrv.err"
  rc=$?
  [ $rc -eq 0 ] && ! grep -q 'file=.*libarkcos_gpu' "$T/nodrv.err" && ok \
    || bad "auto without a driver: exit $rc, module loaded: $(grep -c 'file=.*libarkcos_gpu' "$T/nodrv.err")"
  "$ARKCOS" smooth "$T/a.fits" "$T/nodrv-gpu.fits" "${K[@]}" --backend gpu >/dev/null 2>"$T/nodrv-gpu.err"
  rc=$?
  [ $rc -eq 2 ] && grep -q 'backend gpu: no CUDA device found: no NVIDIA driver' "$T/nodrv-gpu.err" && ok \
    || bad "--backend gpu without a driver: exit $rc: $(cat "$T/nodrv-gpu.err")"
else
  echo "  (an NVIDIA driver is installed here: the driverless path is not checked)"
fi

# a module that is not there: the reason, everywhere
export ARKCOS_GPU_MODULE="$T/none/libarkcos_gpu.so.1"
"$ARKCOS" smooth "$T/a.fits" "$T/g.fits" "${K[@]}" --backend gpu >/dev/null 2>"$T/g.err"
rc=$?
[ $rc -eq 2 ] && [ ! -e "$T/g.fits" ] && ok || bad "--backend gpu without the module: exit $rc, expected 2"
grep -q "did not load: $T/none/libarkcos_gpu.so.1: no such file" "$T/g.err" && ok \
  || bad "--backend gpu without the module: $(cat "$T/g.err")"
"$ARKCOS" info >"$T/info.out" 2>&1
grep -q '^backend .*CPU backend (the GPU backend (libarkcos_gpu.so.1) did not load' "$T/info.out" && ok \
  || bad "info without the module: $(grep '^backend' "$T/info.out")"
"$ARKCOS" smooth "$T/a.fits" "$T/auto.fits" "${K[@]}" >/dev/null 2>"$T/auto.err"
rc=$?
# the same map as the CPU's (to rounding: FFTW may plan a length anew)
same=$("$PYTHON" -c "import sys, warnings, numpy as np, healpy as hp; warnings.simplefilter('ignore')
a, b = hp.read_map(sys.argv[1]), hp.read_map(sys.argv[2]); print(int(np.max(abs(a - b)) <= 1e-12 * np.max(abs(b))))" \
  "$T/auto.fits" "$T/small.fits" 2>/dev/null)
[ $rc -eq 0 ] && [ "$same" = 1 ] && ok || bad "auto backend without the module: exit $rc, same map as the CPU's: $same"
unset ARKCOS_GPU_MODULE

echo "TESTS $pass $fail"
[ "$fail" -eq 0 ]
