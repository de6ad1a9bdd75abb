#!/bin/sh
# Installs the built project into a temporary prefix, then builds a small
# outside program against it twice: through CMake (find_package, shared and
# static targets) and through pkg-config (shared, and static), and runs each.
# usage: package-test.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 source=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name aoi.pc | head -n 1)")/..
test -f "$tmp/prefix/include/aoi.h"
ls "$libdir"/libaoi.so.* "$libdir"/libaoi.a >/dev/null

# CMake consumer.
cmake -S "$source/tests/package" -B "$tmp/consumer" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH=$libdir "$tmp/consumer/consumer"
"$tmp/consumer/consumer_static"
LD_LIBRARY_PATH=$libdir "$tmp/consumer/minimal" >/dev/null
# The shared one really is linked against the installed SONAME.
soname=$(objdump -p "$tmp/consumer/consumer" | awk '/NEEDED/ && /libaoi/ {print $2}')
test -n "$soname"
test -e "$libdir/$soname"

# pkg-config consumer.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 "$source/tests/package/main.c" -o "$tmp/pc" $(pkg-config --cflags --libs aoi)
LD_LIBRARY_PATH=$libdir "$tmp/pc"
cc -std=c11 "$source/examples/minimal.c" -o "$tmp/minimal" \
  $(pkg-config --cflags --libs aoi)
LD_LIBRARY_PATH=$libdir "$tmp/minimal" >/dev/null
cc -std=c11 -DAOI_STATIC "$source/tests/package/main.c" -o "$tmp/pc_static" \
  $(pkg-config --cflags aoi) "$libdir/libaoi.a" $(pkg-config --static --libs-only-l aoi | sed 's/-laoi//')
"$tmp/pc_static"
echo "package: cmake (shared, static) and pkg-config (shared, static) consumers and examples/minimal.c ran"
