#!/usr/bin/env bash
# Installs the Debian packages ARKCoS bench needs. With --if-missing it
# does nothing when they are all present (what `make test` calls).
set -euo pipefail
# the Python package's test (tests/test_python.sh): a venv with pip and setuptools
py_pkgs=(python3-numpy python3-venv python3-setuptools python3-wheel)
# clang with its libFuzzer runtime and OpenMP: make fuzz; valgrind: make valgrind
# qemu-user: tests/test_wheel.sh runs the Python wheel on emulated older CPUs
pkgs=(gcc g++ make libfftw3-dev libsharp-dev libcfitsio-dev libjansson-dev libchealpix-dev
      python3-healpy gnuplot-nox pkg-config bsdutils
      clang libclang-rt-14-dev libomp-dev valgrind qemu-user)
# Optional group: OpenMPI for `make MPI=1` / `make mpi` and tests/test_mpi.sh
# (docs/MPI.md). Installed by a plain run (CI, make install-deps), not
# required by --if-missing: the project builds and tests without it.
# ARKCOS_NO_MPI=1 leaves it out.
if [ "${1:-}" != "--if-missing" ] && [ "${ARKCOS_NO_MPI:-0}" != 1 ]; then
  pkgs+=(libopenmpi-dev openmpi-bin)
fi
missing=()
for p in "${pkgs[@]}" "${py_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  [ "${1:-}" = "--if-missing" ] || echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
