#!/bin/sh
# Runs examples/minimal.c's program and checks that the README shows the
# file as it is and the output it prints (sorted: watchers come in the
# order the workers computed them, which depends on the layout).
# usage: minimal-check.sh MINIMAL README.md examples/minimal.c
set -eu
program=$1 readme=$2 source=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$program" > "$tmp/got"
# The README's first ```c block is the file; the ``` block after "It
# prints" is its output.
awk '/^```c$/ && !done {on = 1; next} on && /^```$/ {on = 0; done = 1}
     on {print}' "$readme" > "$tmp/shown"
if ! cmp -s "$tmp/shown" "$source"; then
  echo "README.md does not show examples/minimal.c as it is:" >&2
  diff "$tmp/shown" "$source" >&2 || true
  exit 1
fi
awk '/^It prints/ {seek = 1; next} seek && /^```/ {if (on) exit; on = 1; next}
     on {print}' "$readme" > "$tmp/want"
sort "$tmp/got" > "$tmp/got.sorted"
sort "$tmp/want" > "$tmp/want.sorted"
if ! cmp -s "$tmp/got.sorted" "$tmp/want.sorted"; then
  echo "examples/minimal.c prints other lines than README.md shows:" >&2
  diff "$tmp/want.sorted" "$tmp/got.sorted" >&2 || true
  exit 1
fi
echo "minimal: README shows the file and its output"
