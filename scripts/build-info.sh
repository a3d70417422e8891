#!/bin/sh
# build-info.sh -- prints the C header that records what is being built: the
# git commit of this source tree and whether its tracked files differ from
# it. The Makefile writes it to $(BUILD)/gen/arkcos_build_info.h (replaced
# only when the text changes) for arkcos/build_info.c; the programs and
# libarkcos.so report it, and never ask git at run time.
#
# A tree without its own git history (a tarball, an exported copy, even one
# unpacked inside another repository) is "unknown", dirty -1, unless whoever
# exported it says which commit it is: ARKCOS_BUILD_COMMIT (40 hex digits)
# and ARKCOS_BUILD_DIRTY (0 or 1; -1, unknown, if not given). A tree with its
# own history ignores both.
top=$(cd "$(dirname "$0")/.." && pwd -P)
commit=unknown
dirty=-1
if command -v git >/dev/null 2>&1 &&
   gtop=$(git -C "$top" rev-parse --show-toplevel 2>/dev/null) &&
   [ "$(cd "$gtop" && pwd -P)" = "$top" ] &&
   c=$(git -C "$top" rev-parse --verify -q HEAD 2>/dev/null); then
  commit=$c
  if [ -n "$(git -C "$top" status --porcelain --untracked-files=no 2>/dev/null | head -1)" ]; then
    dirty=1
  else
    dirty=0
  fi
elif printf '%s' "${ARKCOS_BUILD_COMMIT:-}" | grep -Eqx '[0-9a-f]{40}'; then
  commit=$ARKCOS_BUILD_COMMIT
  case ${ARKCOS_BUILD_DIRTY:-} in 0|1) dirty=$ARKCOS_BUILD_DIRTY ;; *) dirty=-1 ;; esac
fi
echo "/* made by scripts/build-info.sh: the commit this build was made from */"
echo "#define ARKCOS_BUILD_COMMIT \"$commit\""
echo "#define ARKCOS_BUILD_DIRTY $dirty"
