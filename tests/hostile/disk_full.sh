#!/usr/bin/env bash
# disk_full.sh -- README, Guarantees: a full disk (ENOSPC) while smooth writes
# its output and while a sweep rewrites results.json: exit 1 with the
# system's reason, nothing at the output path, no temporary file, and the
# last results.json intact. Needs a small tmpfs, so root (or a mount it may
# make); elsewhere it prints a skip line. Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/../.."
. tests/cli_lib.sh disk-full
D=$T/small
mkdir -p "$D"
if ! mount -t tmpfs -o size=96k tmpfs "$D" 2>/dev/null; then
  echo "  skip: cannot mount a small tmpfs here (needs root)"; echo "TESTS 0 0"; exit 0
fi
trap 'umount "$D" 2>/dev/null; rm -rf "$T"' EXIT
"$PYTHON" -c "
import healpy as hp, numpy as np, warnings; warnings.simplefilter('ignore')
hp.write_map('$T/m.fits', np.random.default_rng(2).standard_normal(12 * 64 ** 2), dtype=np.float64)"
# a 400 kB output on a 96 kB disk
"$ARKCOS" smooth "$T/m.fits" "$D/o.fits" --fwhm-arcmin 220 --backend cpu >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && ok || bad "smooth on a full disk: exit $rc"
grep -qF "No space left on device" "$T/err" && ok || bad "smooth: reason not given: $(cat "$T/err")"
[ -z "$(ls -A "$D")" ] && ok || bad "smooth: left behind: $(ls -A "$D")"
# a sweep whose results.json outgrows the disk (outputs.maps fills it)
cat >"$T/fill.json" <<'JSON'
{"name": "fill", "grid": {"nside": [8, 16, 32]}, "repeats": 1, "warmup": 0, "threads": 1,
 "kernels": [{"type": "gaussian", "fwhm_arcmin": 900, "cutoff_rel": 1e-5}],
 "methods": [{"name": "arkcos"}, {"name": "fsht", "iter": 0}], "reference": "none",
 "limits": {"min_pixels_per_fwhm": 0}, "outputs": {"maps": true}}
JSON
"$ARKCOS" run "$T/fill.json" --out "$D/run" >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && ok || bad "sweep on a full disk: exit $rc ($(cat "$T/err"))"
# the reason: on stderr when results.json itself could not be written, else
# in the failed case's "reason"
cat "$T/err" "$D/run/results.json" | grep -qF "No space left on device" && ok \
  || bad "sweep: reason not given: $(cat "$T/err")"
"$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); assert 'cases' in d" "$D/run/results.json" \
  && ok || bad "sweep: results.json not valid after the disk filled"
left=$(find "$D" -name '*.tmp-*')
[ -z "$left" ] && ok || bad "sweep: temporary files left: $left"
echo "TESTS $pass $fail"
[ "$fail" -eq 0 ]
