#!/usr/bin/env bash
# test_install.sh -- `make install` and `make uninstall` into a staging
# folder (DESTDIR) under a PREFIX (pkg-config told the staged prefix): the installed files, the soname and its
# links, only the functions of arkcos.h exported, a client built with
# `pkg-config --cflags --libs arkcos` that runs and equals the same client
# linked with the static build/libarkcos.a byte for byte (Libs.private
# links that one), the man page, and nothing left after uninstall.
# Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh install
BUILD="${BUILD:-build}"
CC="${CC:-cc}"
check() { if eval "$2"; then ok; else bad "$1"; fi; }

stage=$T/stage
prefix=/opt/arkcos-test
root=$stage$prefix
if ! make -s --no-print-directory install BUILD="$BUILD" DESTDIR="$stage" PREFIX="$prefix" \
     >"$T/install.log" 2>&1; then
  bad "make install failed"; cat "$T/install.log"; echo "TESTS $pass $fail"; exit 1
fi
ok

# ------------------------------------------------------------ the files
for f in bin/arkcos lib/libarkcos.so.1.0.0 include/arkcos.h lib/pkgconfig/arkcos.pc \
         share/man/man1/arkcos.1; do
  check "$f not installed" "[ -f '$root/$f' ]"
done
check "libarkcos.so.1 -> libarkcos.so.1.0.0" \
  "[ \"\$(readlink '$root/lib/libarkcos.so.1')\" = libarkcos.so.1.0.0 ]"
check "libarkcos.so -> libarkcos.so.1" "[ \"\$(readlink '$root/lib/libarkcos.so')\" = libarkcos.so.1 ]"
soname=$(readelf -d "$root/lib/libarkcos.so.1.0.0" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
check "soname is '$soname', not libarkcos.so.1" "[ '$soname' = libarkcos.so.1 ]"
check "installed arkcos does not run" "'$root/bin/arkcos' --version | grep -q '^arkcos '"
if command -v man >/dev/null; then
  check "man page does not render" "man -l '$root/share/man/man1/arkcos.1' 2>/dev/null | grep -q 'arkcos smooth'"
else
  check "man page has no .TH line" "grep -q '^\.TH ARKCOS 1' '$root/share/man/man1/arkcos.1'"
fi

# ----------------------------------------------- exported = arkcos.h's functions
nm -D --defined-only "$root/lib/libarkcos.so.1.0.0" | awk '$2 ~ /^[TWiV]$/ {print $3}' | sort \
  >"$T/exported"
"$CC" -E -P "$root/include/arkcos.h" | grep -oE '\barkcos_[a-z0-9_]+[[:space:]]*\(' |
  tr -d '( \t' | sort -u >"$T/declared"
nm -D --defined-only "$root/lib/libarkcos.so.1.0.0" | awk '{print $3}' | grep -v '^arkcos_' \
  >"$T/foreign"
echo "  exported: $(wc -l <"$T/exported") functions, declared in arkcos.h: $(wc -l <"$T/declared")"
check "symbols other than arkcos_* exported: $(tr '\n' ' ' <"$T/foreign")" "[ ! -s '$T/foreign' ]"
check "exported and declared differ: $(diff "$T/declared" "$T/exported" | grep '^[<>]' | tr '\n' ' ')" \
  "cmp -s '$T/declared' '$T/exported'"
check "fewer than 30 functions exported" "[ \$(wc -l <'$T/exported') -ge 30 ]"

# ---------------------------------------------- a client through pkg-config
# the staged copy: its prefix moved under DESTDIR, as a packager would see it
export PKG_CONFIG_PATH=$root/lib/pkgconfig
pc() { pkg-config --define-variable=prefix="$root" "$@" arkcos; }
flags=$(pc --cflags --libs) || { bad "pkg-config --cflags --libs arkcos failed"; flags=; }
echo "  pkg-config --cflags --libs arkcos: $flags"
if "$CC" -std=c11 -O2 -o "$T/client" tests/install_smooth.c $flags -lm 2>"$T/cc.log"; then
  ok
  LD_LIBRARY_PATH=$root/lib "$T/client" "$T/shared.raw" && ok || bad "client against libarkcos.so failed"
  check "client does not load the installed libarkcos.so.1" \
    "LD_LIBRARY_PATH='$root/lib' ldd '$T/client' | grep -q '$root/lib/libarkcos.so.1'"
else
  bad "client does not build against the installed library"; cat "$T/cc.log"
fi
static=$(pc --static --libs)
static=${static/-larkcos/$PWD/$BUILD/libarkcos.a}
if "$CC" -std=c11 -O2 -I"$root/include" -o "$T/client_static" tests/install_smooth.c $static -lm \
     2>"$T/cc2.log"; then
  ok
  "$T/client_static" "$T/static.raw" >/dev/null && ok || bad "client against libarkcos.a failed"
  check "libarkcos.so and libarkcos.a differ" "cmp '$T/shared.raw' '$T/static.raw'"
  check "client output is not an nside 16 map" "[ \$(stat -c %s '$T/shared.raw') -eq $((12 * 256 * 8)) ]"
else
  bad "client does not link the static build with Libs.private: $static"; cat "$T/cc2.log"
fi
unset PKG_CONFIG_PATH

# ------------------------------------------ provenance of the installed copy
# run from another folder, the installed binary names the commit it was
# built from (tests/test_provenance.sh has the other cases)
built=$(sed -n 's/^#define ARKCOS_BUILD_COMMIT "\(.*\)"$/\1/p' "$BUILD/gen/arkcos_build_info.h")
got=$(cd "$T" && "$root/bin/arkcos" info --json | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["git_commit"])')
check "installed arkcos info names '$got', built from '$built'" "[ -n '$built' ] && [ '$got' = '$built' ]"

# ------------------------------------------------------------- uninstall
make -s --no-print-directory uninstall BUILD="$BUILD" DESTDIR="$stage" PREFIX="$prefix" \
  >"$T/uninstall.log" 2>&1 && ok || bad "make uninstall failed: $(cat "$T/uninstall.log")"
left=$(find "$stage" ! -type d | tr '\n' ' ')
check "uninstall left $left" "[ -z '$left' ]"

echo "TESTS $pass $fail"
