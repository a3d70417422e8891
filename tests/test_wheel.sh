#!/usr/bin/env bash
# test_wheel.sh -- the wheel that `pip wheel ./python` builds runs on any
# x86-64 CPU and needs nothing of the system but glibc and numpy:
#   - its name (py3-none-manylinux_2_N_x86_64, N the newest glibc symbol
#     version its libraries ask for), its files (libarkcos.so.1 and
#     libgomp.so.1, FFTW linked in; the libraries exactly those of
#     make portable-lib's bundle.txt), RUNPATH $ORIGIN, no NEEDED library that
#     is neither glibc's nor in the package, the functions of the native
#     libarkcos.so exported, each an indirect function;
#   - installed into a fresh virtual environment and run from outside the
#     repository: build_info() names the commit the build recorded, and the
#     copy for this CPU gives the native build's results (build/libarkcos.so,
#     -march=native) to rounding; with healpy imported first, its libgomp
#     (the system's) serves, the package's is not loaded beside it;
#   - under emulated CPUs (qemu-x86_64 -cpu qemu64 / Nehalem / Haswell-noTSX:
#     x86-64, x86-64-v2, x86-64-v3, none with AVX-512) the loader picks the
#     matching copy and the results agree with the native build's to
#     rounding; the native library itself dies there (shown, not counted);
#   - with the system's libfftw3*, libfftw3f* and libgomp hidden (a mount
#     namespace, /dev/null bound over each; root only, else skipped) the
#     installed package still loads and gives the same results, with
#     libgomp mapped from the package and no FFTW library mapped at all
#     (while the native library then fails to load: the hiding works).
# Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh wheel
BUILD="${BUILD:-build}"
export BUILD
check() { if eval "$2"; then ok; else bad "$1"; fi; }

if [ "$(uname -m)" != x86_64 ]; then
  echo "SKIP not an x86-64 machine: the portable library is x86-64's"; echo "TESTS 0 0"; exit 0
fi
if ! "$PYTHON" -c 'import venv, ensurepip, numpy' 2>/dev/null; then
  echo "SKIP $PYTHON lacks venv, ensurepip or numpy (python3-venv, python3-numpy)"
  echo "TESTS 0 0"; exit 0
fi
native=$PWD/$BUILD/libarkcos.so.1
[ -f "$native" ] || { bad "no native library $native (make lib)"; echo "TESTS $pass $fail"; exit 1; }
if readelf -d "$native" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
  echo "SKIP a sanitized build (make sanitize): an uninstrumented python3 cannot load $native"
  echo "TESTS 0 0"; exit 0
fi

# ---------------------------------------------------------------- the wheel
"$PYTHON" -m venv --system-site-packages "$T/venv" >"$T/venv.log" 2>&1 ||
  { bad "venv: $(cat "$T/venv.log")"; echo "TESTS $pass $fail"; exit 1; }
if ! "$T/venv/bin/pip" wheel --no-deps --no-index --no-build-isolation ./python -w "$T/dist" \
     >"$T/wheel.log" 2>&1; then
  bad "pip wheel ./python failed"; tail -30 "$T/wheel.log"; echo "TESTS $pass $fail"; exit 1
fi
whl=$(ls "$T"/dist/arkcos-*.whl 2>/dev/null | head -1)
glibc=$(cat "$BUILD/portable/glibc.txt" 2>/dev/null)
echo "  wheel: $(basename "$whl") ($(stat -c %s "$whl") bytes)"
check "wheel '$(basename "$whl")' is not py3-none-manylinux_${glibc/./_}_x86_64" \
  "[ -n '$glibc' ] && [[ '$(basename "$whl")' == arkcos-*-py3-none-manylinux_${glibc/./_}_x86_64.whl ]]"
"$PYTHON" -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$whl" \
  >"$T/files" 2>/dev/null
for f in arkcos/libarkcos.so.1 arkcos/libgomp.so.1 arkcos/__init__.py arkcos/_lib.py; do
  check "$f not in the wheel" "grep -qx '$f' '$T/files'"
done
# the libraries are those make portable-lib listed, no more (no leftovers of
# an earlier build in python/build)
check "the wheel's libraries ($(grep '\.so' "$T/files" | sed 's,.*/,,' | sort | tr '\n' ' ')) are not those of $BUILD/portable/bundle.txt" \
  "[ \"\$(grep '\.so' '$T/files' | sed 's,.*/,,' | sort)\" = \"\$(sort '$BUILD/portable/bundle.txt')\" ]"
check "the wheel carries FFTW as files: $(grep fftw "$T/files" | tr '\n' ' ')" \
  "! grep -q 'libfftw' '$T/files'"

# the wheel file installed into the fresh environment (numpy: the system's)
"$T/venv/bin/pip" install --no-deps --no-index "$whl" >"$T/install.log" 2>&1 ||
  { bad "installing $whl: $(tail -5 "$T/install.log")"; echo "TESTS $pass $fail"; exit 1; }
site=$(cd "$T" && "$T/venv/bin/python" -c 'import arkcos, os; print(os.path.dirname(arkcos.__file__))')
case $site in "$T"/venv/*) ok ;; *) bad "arkcos imported from '$site', not the venv" ;; esac
lib=$site/libarkcos.so.1
readelf -dW "$lib" >"$T/dyn" 2>&1
check "RUNPATH is not \$ORIGIN: $(grep -E 'RPATH|RUNPATH' "$T/dyn")" \
  "grep -q 'Library runpath: \[\$ORIGIN\]' '$T/dyn'"
needed=$(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' "$T/dyn" | tr '\n' ' ')
echo "  NEEDED: $needed"
for n in $needed; do
  case $n in
    libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | librt.so.1 | ld-linux-x86-64.so.2) ok ;;
    *) check "NEEDED $n is neither glibc's nor in the package" "[ -f '$site/$n' ]" ;;
  esac
done
nm -D --defined-only "$native" | awk '{print $3}' | sort >"$T/native.sym"
nm -D --defined-only "$lib" | awk '$3 != "arkcos_portable_isa" {print $3}' | sort >"$T/wheel.sym"
check "exported functions differ from the native library's: $(diff "$T/native.sym" "$T/wheel.sym" | grep '^[<>]' | tr '\n' ' ')" \
  "[ -s '$T/native.sym' ] && cmp -s '$T/native.sym' '$T/wheel.sym'"
check "exported functions that are not indirect: $(nm -D --defined-only "$lib" | awk '$2 != "i" && $3 != "arkcos_portable_isa"' | tr '\n' ' ')" \
  "[ -z \"\$(nm -D --defined-only '$lib' | awk '\$2 != \"i\" && \$3 != \"arkcos_portable_isa\"')\" ]"

# ------------------------------------------------------------ the check run
# smooths a few maps (double, float, I Q U, top-hat) at nside 16 and saves
# them; prints one JSON line: the copy that ran, build_info(), and the
# FFTW/libgomp files mapped into the process
cat >"$T/check.py" <<'EOF'
import ctypes, importlib, json, os, sys
import numpy as np
if os.environ.get("ARKCOS_CHECK_IMPORT_FIRST"):
    importlib.import_module(os.environ["ARKCOS_CHECK_IMPORT_FIRST"])
import arkcos
from arkcos import _lib
try:
    f = _lib.lib.arkcos_portable_isa
    f.restype = ctypes.c_char_p
    isa = f().decode()
except AttributeError:
    isa = "native"
nside = 16
npix = 12 * nside * nside
pix = np.sqrt(4 * np.pi / npix)
rng = np.random.default_rng(20261126)
m = rng.standard_normal(npix)
iqu = rng.standard_normal((3, npix))
kw = dict(threads=2, backend="cpu")
res = {"double": arkcos.smoothing(m, fwhm=3 * pix, **kw),
       "single": arkcos.smoothing(m.astype(np.float32), fwhm=5 * pix, precision="single", **kw),
       "iqu": np.array(arkcos.smoothing(list(iqu), fwhm=4 * pix, **kw)),
       "tophat": arkcos.smoothing(m, tophat=2.5 * pix, **kw)}
# nside 64: the polar caps' reconstruction applies (nside >= 32), whose
# solve amplifies its tables' rounding (polar.c, lanes_sum); white noise,
# its most sensitive input
n64 = 12 * 64 * 64
pix64 = np.sqrt(4 * np.pi / n64)
res["polar"] = arkcos.smoothing(rng.standard_normal(n64), fwhm=4 * pix64, gaussian="profile", **kw)
res["polar_iqu"] = np.array(arkcos.smoothing(list(rng.standard_normal((3, n64))), fwhm=4 * pix64,
                                             gaussian="profile", **kw))
np.savez(sys.argv[1], **res)
with open("/proc/self/maps") as f:
    mapped = sorted({l.split()[-1] for l in f if "fftw" in l or "gomp" in l})
info = arkcos.build_info()
print(json.dumps({"isa": isa, "commit": info["commit"], "dirty": info["dirty"],
                  "version": info["version"], "pkg_version": arkcos.__version__,
                  "mapped": mapped}))
EOF
# compare REF OUT: the largest difference relative to the map's largest
# value, for double maps and for the float one
cat >"$T/cmp.py" <<'EOF'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
d = {k: float(np.max(np.abs(a[k].astype(float) - b[k])) / np.max(np.abs(a[k]))) for k in a}
print(max(v for k, v in d.items() if k != "single" and not k.startswith("polar")), d["single"],
      max(v for k, v in d.items() if k.startswith("polar")))
EOF
field() { "$PYTHON" -c 'import json, sys; v = json.loads(sys.argv[1])[sys.argv[2]]; print(v)' "$1" "$2" 2>/dev/null; }
# run NAME [PREFIX...]: the installed package from $T, under PREFIX
run() {
  local name=$1; shift
  (cd "$T" && "$@" "$T/venv/bin/python" "$T/check.py" "$T/$name.npz") >"$T/$name.out" 2>"$T/$name.err"
}
# results of the native build: the same package code, the native library
(cd "$T" && ARKCOS_PYTHON_LIBRARY=$native "$T/venv/bin/python" "$T/check.py" "$T/native.npz") \
  >"$T/native.out" 2>"$T/native.err" || bad "the native library's run: $(tail -3 "$T/native.err")"
# Thresholds: measured on an AVX-512 machine (native: -march=native),
# largest difference relative to the map's largest value: the host's copy
# (x86-64-v4) and the x86-64-v3 copy under qemu equal to the bit; the
# x86-64 and -v2 copies under qemu 5.1e-16 (double) and 1.4e-7 (float)
# (FFTW and libm take their SSE2 paths there, not their AVX ones)
TOL_D=1e-15
TOL_F=6e-7
# The polar caps at nside 64 (white noise, I and I, Q, U): every copy run
# where libm takes the same code as for the native build (this CPU, or an
# emulated one with FMA as this one) equal to the bit (measured 0: its sums
# in a fixed order); where libm takes other code (an emulated CPU with or
# without FMA unlike this one: qemu64, Nehalem), the tables' last bits
# differ and the solve amplifies them: measured 4.6e-8 of the map's largest
# value here, 3.0e-8 (I) and 6.1e-8 (Q, U) with other white-noise maps (a
# band-limited map: 2.5e-13)
TOL_POLAR_LIBM=1e-7
host_fma=$(grep -qw fma /proc/cpuinfo && echo 1 || echo 0)
# agree NAME [FMA]: NAME's results against the native build's; FMA (0 or
# 1) whether the CPU it ran on has FMA, when it is not this one
agree() {
  local d tolp=$TOL_D
  [ -n "${2:-}" ] && [ "$2" != "$host_fma" ] && tolp=$TOL_POLAR_LIBM
  d=$("$PYTHON" "$T/cmp.py" "$T/native.npz" "$T/$1.npz" 2>&1) || { bad "$1: compare: $d"; return; }
  set -- "$1" $d
  check_le "$1: difference from the native build (double)" "$2" $TOL_D
  check_le "$1: difference from the native build (float)" "$3" $TOL_F
  check_le "$1: difference from the native build (the polar caps, nside 64)" "$4" $tolp
}

# ---------------------------------------------------------- this machine
if run host; then
  ok
  line=$(tail -1 "$T/host.out")
  echo "  this CPU runs the copy $(field "$line" isa)"
  agree host
  built=$(sed -n 's/^#define ARKCOS_BUILD_COMMIT "\(.*\)"$/\1/p' "$BUILD/gen/arkcos_build_info.h")
  dirty=$(sed -n 's/^#define ARKCOS_BUILD_DIRTY \(.*\)$/\1/p' "$BUILD/gen/arkcos_build_info.h")
  want_dirty=$(case $dirty in 1) echo True ;; 0) echo False ;; *) echo None ;; esac)
  got=$(field "$line" commit)
  check "build_info() names commit '$got', the build recorded '$built'" \
    "[ -n '$built' ] && [ '$got' = '$built' ]"
  check "build_info() dirty $(field "$line" dirty), the build recorded $dirty" \
    "[ '$(field "$line" dirty)' = '$want_dirty' ]"
  check "__version__ $(field "$line" pkg_version), library $(field "$line" version)" \
    "[ '$(field "$line" pkg_version)' = '$(field "$line" version)' ]"
else
  bad "the installed wheel does not run: $(tail -5 "$T/host.err")"
fi

# with a libgomp.so.1 loaded already (healpy's, the system's): that one serves
if (cd "$T" && "$T/venv/bin/python" -c 'import healpy' 2>/dev/null); then
  if run healpy_first env ARKCOS_CHECK_IMPORT_FIRST=healpy; then
    mapped=$(field "$(tail -1 "$T/healpy_first.out")" mapped)
    echo "  healpy imported first: mapped $mapped"
    check "two libgomp mapped with healpy imported first: $mapped" \
      "[ \$(echo \"\$mapped\" | grep -o 'libgomp' | wc -l) -eq 1 ]"
    agree healpy_first
  else
    bad "the installed wheel with healpy imported first: $(tail -3 "$T/healpy_first.err")"
  fi
fi

# ------------------------------------------------------ emulated CPUs
if ! command -v qemu-x86_64 >/dev/null; then
  echo "SKIP emulated CPUs: no qemu-x86_64 (Debian's qemu-user; make install-deps)"
else
  for cpu in qemu64:x86-64:0 Nehalem:x86-64-v2:0 Haswell-noTSX:x86-64-v3:1; do
    model=${cpu%%:*} want=${cpu#*:} fma=${cpu##*:}
    want=${want%:*}
    t0=$SECONDS
    if run "$model" qemu-x86_64 -cpu "$model"; then
      got=$(field "$(tail -1 "$T/$model.out")" isa)
      echo "  qemu -cpu $model: the copy $got ($((SECONDS - t0)) s)"
      check "qemu -cpu $model ran the copy '$got', not $want" "[ '$got' = '$want' ]"
      agree "$model" "$fma"
    else
      bad "qemu -cpu $model: $(grep -v 'TCG doesn' "$T/$model.err" | tail -3)"
    fi
  done
  # the native library on a CPU without its instructions (not counted)
  # (in a command substitution: the shell's own "Illegal instruction" notice stays out of the log)
  rc=$( { (cd "$T" && ARKCOS_PYTHON_LIBRARY=$native qemu-x86_64 -cpu Nehalem \
          "$T/venv/bin/python" "$T/check.py" "$T/x.npz") >/dev/null 2>"$T/nat-qemu.err"
        echo $?; } 2>/dev/null)
  echo "  for comparison, the native library under qemu -cpu Nehalem: exit $rc $(grep -o 'Illegal instruction' "$T/nat-qemu.err" | head -1)"
fi

# -------------------------------------------- no FFTW or libgomp on the system
hidden=$(ls /usr/lib/x86_64-linux-gnu/libfftw3*.so* /usr/lib/x86_64-linux-gnu/libgomp.so* \
           /usr/lib64/libfftw3*.so* /usr/lib64/libgomp.so* 2>/dev/null | xargs -r readlink -f | sort -u)
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP no-system-FFTW run: needs root (unshare -m, mount --bind /dev/null over the libraries)"
elif ! unshare -m true 2>/dev/null; then
  echo "SKIP no-system-FFTW run: unshare -m refused here (a container without CAP_SYS_ADMIN?)"
else
  cat >"$T/hide.sh" <<'EOF'
for f in $HIDE; do mount --bind /dev/null "$f" || exit 99; done
"$@"
EOF
  export HIDE="$hidden"
  echo "  hidden: $(echo $hidden | wc -w) files ($(echo $hidden | tr ' ' '\n' | sed 's,.*/,,' | tr '\n' ' '))"
  if ! (cd "$T" && unshare -m bash "$T/hide.sh" "$T/venv/bin/python" -c 'import numpy') 2>/dev/null; then
    echo "SKIP no-system-FFTW run: numpy itself does not load without them"
  else
    (cd "$T" && ARKCOS_PYTHON_LIBRARY=$native unshare -m bash "$T/hide.sh" "$T/venv/bin/python" \
       -c 'import arkcos') >/dev/null 2>"$T/hidden-native.err"
    rc=$?
    check "the native library loaded with the system's FFTW and libgomp hidden (exit $rc)" "[ $rc -ne 0 ]"
    echo "  the native library there: $(grep -o '[^ ]*: file too short' "$T/hidden-native.err" | head -1)"
    if run hidden unshare -m bash "$T/hide.sh"; then
      ok
      line=$(tail -1 "$T/hidden.out")
      mapped=$(field "$line" mapped)
      echo "  mapped: $mapped"
      check "libgomp not mapped from the package: $mapped" \
        "[[ \"\$mapped\" == *\"'$site/libgomp.so.1'\"* ]]"
      check "an FFTW library mapped: $mapped" "[[ \"\$mapped\" != *fftw* ]]"
      check "a system library mapped: $mapped" "[[ \"\$mapped\" != *'/usr/lib'* ]]"
      agree hidden
    else
      bad "the installed wheel without the system's FFTW and libgomp: $(tail -5 "$T/hidden.err")"
    fi
  fi
fi
echo "TESTS $pass $fail"
