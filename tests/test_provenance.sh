#!/usr/bin/env bash
# test_provenance.sh -- the commit a build reports is the one it was built
# from, fixed at build time (scripts/build-info.sh, the Makefile's
# $(BUILD)/gen/arkcos_build_info.h, arkcos_build_commit()):
#   - the build's header names this tree's HEAD (make was run after the last
#     commit);
#   - a copy of build/arkcos run from inside another git repository, with a
#     `git` first on PATH that records being called, reports the built
#     commit in `arkcos info` and `arkcos info --json`, and never runs git;
#   - a copy of libarkcos.so.1 elsewhere reports it through
#     arkcos_build_commit() / arkcos_build_dirty();
#   - build-info.sh: "unknown" for an exported tree without .git unpacked
#     inside another repository, the commit and dirty 0 / 1 in a repository;
#   - the Makefile rewrites the header when HEAD or the dirty state changes
#     and leaves it (its time stamp) alone otherwise.
# Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
. tests/cli_lib.sh provenance
BUILD="${BUILD:-build}"
case $BUILD in /*) BDIR=$BUILD ;; *) BDIR=$ROOT/$BUILD ;; esac
check() { if eval "$2"; then ok; else bad "$1"; fi; }
G() { git -c user.name=t -c user.email=t@example.org -c init.defaultBranch=main "$@"; }

hdr=$BDIR/gen/arkcos_build_info.h
if [ ! -f "$hdr" ]; then bad "no $hdr: build with make first"; echo "TESTS $pass $fail"; exit 1; fi
built=$(sed -n 's/^#define ARKCOS_BUILD_COMMIT "\(.*\)"$/\1/p' "$hdr")
built_dirty=$(sed -n 's/^#define ARKCOS_BUILD_DIRTY \(.*\)$/\1/p' "$hdr")
echo "  built from $built (dirty $built_dirty)"
if head=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null) &&
   [ "$(cd "$(git -C "$ROOT" rev-parse --show-toplevel)" && pwd -P)" = "$(pwd -P)" ]; then
  check "the build names $built, HEAD is $head (run make first)" "[ '$built' = '$head' ]"
else
  check "a tree without git history built as '$built', not unknown" "[ '$built' = unknown ]"
fi

# ------------------------------------- a copied binary inside another repo
other=$T/other
mkdir -p "$other/bin" "$T/fakebin"
(cd "$other" && G init -q && echo x > f && G add f && G commit -qm other) ||
  bad "cannot make a git repository in $other"
other_head=$(git -C "$other" rev-parse HEAD)
cp "$ARKCOS" "$other/bin/arkcos"
cat > "$T/fakebin/git" <<EOF
#!/bin/sh
echo called >> "$T/git-called"
echo 0000000000000000000000000000000000000000
EOF
chmod +x "$T/fakebin/git"
info_json=$(cd "$other" && PATH="$T/fakebin:$PATH" ./bin/arkcos info --json)
info_text=$(cd "$other" && PATH="$T/fakebin:$PATH" ./bin/arkcos info)
got=$(echo "$info_json" | "$PYTHON" -c 'import json, sys; m = json.load(sys.stdin); print(m["git_commit"], m["git_dirty"])')
want_dirty=$(case $built_dirty in 1) echo True ;; 0) echo False ;; *) echo None ;; esac)
echo "  copied binary in another repository (HEAD ${other_head:0:12}): $got"
check "info --json in another repo says '$got', built '$built $want_dirty'" "[ '$got' = '$built $want_dirty' ]"
check "info in another repo: $(echo "$info_text" | grep built)" \
  "echo \"\$info_text\" | grep -q '^built from  git commit $built'"
check "arkcos info ran git at run time" "[ ! -e '$T/git-called' ]"

# ------------------------------------------- the shared library, copied
# (not under AddressSanitizer, make sanitize: an uninstrumented python3
# cannot load the sanitized library; make test runs it)
if [ -n "${ASAN_OPTIONS:-}" ]; then
  echo "  skip: the copied library under AddressSanitizer"
else
cp "$BDIR/libarkcos.so.1.0.0" "$other/bin/libcopy.so"
lib=$(cd "$other" && PATH="$T/fakebin:$PATH" "$PYTHON" -c '
import ctypes
l = ctypes.CDLL("./bin/libcopy.so")
l.arkcos_build_commit.restype = ctypes.c_char_p
l.arkcos_version.restype = ctypes.c_char_p
print(l.arkcos_build_commit().decode(), l.arkcos_build_dirty(), l.arkcos_version().decode())')
echo "  libarkcos.so.1 copied: $lib"
version=$(sed -n 's/^#define ARKCOS_VERSION "\(.*\)"/\1/p' arkcos/arkcos.h)
check "libarkcos says '$lib', built '$built $built_dirty $version'" "[ '$lib' = '$built $built_dirty $version' ]"
check "libarkcos ran git" "[ ! -e '$T/git-called' ]"
fi

# ------------------------------------------------------ build-info.sh
# an exported tree (no .git) unpacked inside another repository
mkdir -p "$other/src/scripts"
cp scripts/build-info.sh "$other/src/scripts/"
out=$(sh "$other/src/scripts/build-info.sh")
echo "$out" | grep -q '^#define ARKCOS_BUILD_COMMIT "unknown"$' && ok ||
  bad "a tree without .git inside another repo: $out"
echo "$out" | grep -q '^#define ARKCOS_BUILD_DIRTY -1$' && ok || bad "dirty of a tree without .git: $out"
# ... whose exporter names its commit (a packed build for another host)
c40=0123456789abcdef0123456789abcdef01234567
out=$(ARKCOS_BUILD_COMMIT=$c40 ARKCOS_BUILD_DIRTY=0 sh "$other/src/scripts/build-info.sh")
echo "$out" | grep -q "^#define ARKCOS_BUILD_COMMIT \"$c40\"\$" && echo "$out" | grep -q '^#define ARKCOS_BUILD_DIRTY 0$' &&
  ok || bad "ARKCOS_BUILD_COMMIT for a tree without .git: $out"
out=$(ARKCOS_BUILD_COMMIT=not-a-commit sh "$other/src/scripts/build-info.sh")
echo "$out" | grep -q '^#define ARKCOS_BUILD_COMMIT "unknown"$' && ok || bad "a malformed ARKCOS_BUILD_COMMIT taken: $out"

# a repository of its own: the Makefile's rule, HEAD and dirty changes
r=$T/repo
mkdir -p "$r/scripts" "$r/arkcos"
cp scripts/build-info.sh "$r/scripts/"
cp Makefile "$r/"
echo '#define ARKCOS_VERSION "0.0.0"' > "$r/arkcos/arkcos.h"
(cd "$r" && G init -q && G add -A && G commit -qm one) || bad "cannot make $r"
mkh() { make -s -C "$r" GPU=0 BUILD=b b/gen/arkcos_build_info.h >/dev/null 2>&1; }
mkh && h1=$(cat "$r/b/gen/arkcos_build_info.h")
c1=$(git -C "$r" rev-parse HEAD)
check "make's header names HEAD $c1, dirty 0: $h1" \
  "echo \"\$h1\" | grep -q '\"$c1\"' && echo \"\$h1\" | grep -q 'DIRTY 0'"
touch -d '2001-01-01' "$r/b/gen/arkcos_build_info.h"
mkh
check "the header was rewritten without a change" \
  "[ \$(stat -c %Y '$r/b/gen/arkcos_build_info.h') -eq \$(date -d 2001-01-01 +%s) ]"
echo change >> "$r/arkcos/arkcos.h"
mkh
check "a changed tracked file: not dirty 1" "grep -q 'DIRTY 1' '$r/b/gen/arkcos_build_info.h'"
(cd "$r" && G commit -qam two)
c2=$(git -C "$r" rev-parse HEAD)
mkh
check "a new commit: the header does not name $c2, dirty 0" \
  "grep -q '\"$c2\"' '$r/b/gen/arkcos_build_info.h' && grep -q 'DIRTY 0' '$r/b/gen/arkcos_build_info.h'"

echo "TESTS $pass $fail"
