#!/bin/sh
# bench.sh: the 20k uniform crowd through aoi-bench (C) and bench.lua (the
# Lua binding, the same operations replayed), on two threads each.
#
#   bindings/lua/bench.sh [BUILD_DIR]     (default: build)
#
# Prints "lua frame X ms, C frame Y ms, ratio Z, checksum match yes/no",
# then the frame with the checksum between the frames.
# Both frames are medians over the 50 timed ticks of submit + tick +
# delivery, and both copy every watcher's events out during the delivery,
# a segment a thread (aoi-bench into its wire buffers, bench.lua's world
# into its kept buffers, ev:keep). aoi-bench folds them into its checksum
# after each frame, in C (checksum_ms, about 3 ms). bench.lua runs twice:
# in "keep" mode for the frame, with no work between the frames, and in
# "wire" mode, which folds every kept event into the checksum in Lua
# after each frame (about 200 ms of Lua), for the checksum; that run's
# frame is printed too. Its tick is slower: on the project's VM any host
# work of tens of milliseconds between frames about doubles the next tick
# (docs/bindings.md), which aoi-bench's 3 ms do not.
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

lua_run() { # MODE
  LUA_CPATH="$build/bindings/lua/?.so" "$lua" "$here/bench.lua" "$ops" 2 "$1"
}
frame_of() { printf '%s\n' "$1" | sed -n 's/.*frame_ms_median \([0-9.]*\).*/\1/p'; }
keep=$(lua_run keep)
wire=$(lua_run wire)
echo "$keep" >&2
echo "$wire" >&2
lua_sum=$(printf '%s\n' "$wire" | sed -n 's/.*checksum \([0-9a-f]*\).*/\1/p')

match=no
[ -n "$c_sum" ] && [ "$c_sum" = "$lua_sum" ] && match=yes
awk -v l="$(frame_of "$keep")" -v w="$(frame_of "$wire")" -v c="$c_frame" \
  -v m="$match" 'BEGIN {
  printf "lua frame %.2f ms, C frame %.2f ms, ratio %.2f, checksum match %s\n",
         l, c, l / c, m
  printf "  with the checksum in Lua between frames: lua frame %.2f ms," \
         " ratio %.2f\n", w, w / c }'
[ "$match" = yes ]
