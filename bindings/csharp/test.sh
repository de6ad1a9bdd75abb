#!/bin/sh
# test.sh BUILD_DIR: builds the C# binding with Mono's mcs into
# BUILD_DIR/bindings/csharp and runs Tests.exe against BUILD_DIR's
# libaoi.so.0.3. Compiles layout.c (with $CC, else cc) for the layout
# check and, when BUILD_DIR has aoi-bench, dumps a 1000-entity crowd for
# the checksum check. Exit status: Tests.exe's; 77 (skipped) without
# mcs or mono.
set -eu

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
out="$build/bindings/csharp"
mkdir -p "$out"

for tool in mcs mono; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "binding_csharp: $tool not found: skipped"
    exit 77
  fi
done

flags="-unsafe -optimize -langversion:7.2 -nologo"
mcs $flags -target:library -out:"$out/Aoi.dll" "$here/Aoi.cs"
cp "$here/Aoi.dll.config" "$out/Aoi.dll.config"
mcs $flags -r:"$out/Aoi.dll" -out:"$out/Tests.exe" \
  "$here/Tests.cs" "$here/Replay.cs"

AOI_LAYOUT=
if ${CC:-cc} -std=c11 -I"$here/../../include" "$here/layout.c" \
     -o "$out/layout" 2>/dev/null; then
  "$out/layout" >"$out/layout.txt"
  AOI_LAYOUT="$out/layout.txt"
else
  echo "binding_csharp: no C compiler: layout checked against x86-64 values"
fi

AOI_OPS=
AOI_CHECKSUM=
if [ -x "$build/aoi-bench" ]; then
  AOI_OPS="$out/crowd-1k.ops"
  AOI_CHECKSUM=$("$build/aoi-bench" --entities 1000 --ticks 10 --threads 1 \
      --no-baseline --json --dump-ops "$AOI_OPS" |
    sed -n 's/.*"checksum":"\([0-9a-f]*\)".*/\1/p')
fi
export AOI_LAYOUT AOI_OPS AOI_CHECKSUM

cd "$out"
LD_LIBRARY_PATH="$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec mono Tests.exe
