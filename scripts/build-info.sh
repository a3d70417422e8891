#!/bin/sh
# build-info.sh -- prints the C header that records what is being built: the
# git commit of this source tree and whether its tracked files differ from
# it. The Makefile writes it to $(BUILD)/gen/arkcos_build_info.h (replaced
# only when the text changes) for arkcos/build_info.c; the programs and
# libarkcos.so report it, and never ask git at run time.
#
# A tree without its own git history (a tarball, an exported copy, even one
# unpacked inside another repository) is "unknown", dirty -1.
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
fi
echo "/* made by scripts/build-info.sh: the commit this build was made from */"
echo "#define ARKCOS_BUILD_COMMIT \"$commit\""
echo "#define ARKCOS_BUILD_DIRTY $dirty"
