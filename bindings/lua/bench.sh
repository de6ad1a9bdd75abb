#!/bin/sh
# bench.sh: the 20k uniform crowd through aoi-bench (C) and bench.lua (the
# Lua binding, the same operations replayed), on two threads each.
#
#   bindings/lua/bench.sh [BUILD_DIR]     (default: build)
#
# Prints "lua frame X ms, C frame Y ms, ratio Z, checksum match yes/no".
# Both frames are medians over the 50 timed ticks of submit + tick +
# delivery, and both copy every watcher's events out during the delivery,
# a segment a thread (aoi-bench into its wire buffers, bench.lua's world
# into its kept buffers, ev:keep) and fold them into the checksum after
# the frame (aoi-bench's checksum_ms).
# bench.lua's other modes time reading every event from Lua instead.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
lua=${LUA:-lua5.4}
ops=$(mktemp "${TMPDIR:-/tmp}/aoi-lua-bench.XXXXXX")
trap 'rm -f "$ops"' EXIT INT TERM

json=$("$build/aoi-bench" --entities 20000 --ticks 50 --threads 2 \
  --no-baseline --json --dump-ops "$ops")
c_frame=$(printf '%s\n' "$json" | sed -n 's/.*"frame_ms_median":\([0-9.e+-]*\).*/\1/p')
c_sum=$(printf '%s\n' "$json" | sed -n 's/.*"checksum":"\([0-9a-f]*\)".*/\1/p')

out=$(LUA_CPATH="$build/bindings/lua/?.so" "$lua" "$here/bench.lua" "$ops" 2)
echo "$out" >&2
lua_frame=$(printf '%s\n' "$out" | sed -n 's/.*frame_ms_median \([0-9.]*\).*/\1/p')
lua_sum=$(printf '%s\n' "$out" | sed -n 's/.*checksum \([0-9a-f]*\).*/\1/p')

match=no
[ -n "$c_sum" ] && [ "$c_sum" = "$lua_sum" ] && match=yes
awk -v l="$lua_frame" -v c="$c_frame" -v m="$match" 'BEGIN {
  printf "lua frame %.2f ms, C frame %.2f ms, ratio %.2f, checksum match %s\n",
         l, c, l / c, m }'
[ "$match" = yes ]
