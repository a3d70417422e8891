#!/usr/bin/env bash
# Installs the Debian packages ARKCoS bench needs. With --if-missing it
# does nothing when they are all present (what `make test` calls).
set -euo pipefail
# clang with its libFuzzer runtime and OpenMP: make fuzz; valgrind: make valgrind
pkgs=(gcc g++ make libfftw3-dev libsharp-dev libcfitsio-dev libjansson-dev libchealpix-dev
      python3-healpy gnuplot-nox pkg-config
      clang libclang-rt-14-dev libomp-dev valgrind)
missing=()
for p in "${pkgs[@]}"; do
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
