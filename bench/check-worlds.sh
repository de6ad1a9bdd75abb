#!/bin/sh
# check-worlds.sh: aoi-bench --worlds ticks many worlds on one pool, and
# every run reports its work, span and threads.
#
# usage: check-worlds.sh PATH/TO/aoi-bench
#
# 50 worlds of 100 entities, at 1 and at 3 pool threads, each in a process
# of its own: each line says worlds 50, carries work_ms_median,
# span_ms_median, predicted_speedup and os_threads as numbers (os_threads
# may be null where /proc is absent), with span <= work; and the two
# checksums are equal, since a world's events do not depend on the pool's
# size. With --measure-cpu off the work and span are null. No timing is
# checked.
set -u

bench=${1:?usage: check-worlds.sh PATH/TO/aoi-bench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# key NAME FILE: the value of "NAME" in the JSON line in FILE.
key() {
  sed -n "s/.*[{,]\"$1\":\\([^,}]*\\).*/\\1/p" "$2"
}

number='^-?[0-9][0-9.eE+-]*$'
for t in 1 3; do
  out=$tmp/t$t
  if ! "$bench" --json --worlds 50 --entities 5000 --ticks 3 --threads "$t" \
      >"$out" 2>"$tmp/err"; then
    echo "check-worlds: the run at $t threads failed:" >&2
    cat "$tmp/err" >&2
    fail=1
    continue
  fi
  lines=$(wc -l <"$out")
  [ "$lines" -eq 1 ] ||
    { echo "check-worlds: $lines lines at $t threads, expected 1" >&2; fail=1; }
  [ "$(key worlds "$out")" = 50 ] ||
    { echo "check-worlds: worlds is not 50 at $t threads" >&2; fail=1; }
  [ "$(key threads "$out")" = "$t" ] ||
    { echo "check-worlds: threads is not $t" >&2; fail=1; }
  for k in work_ms_median span_ms_median predicted_speedup; do
    key "$k" "$out" | grep -q -E "$number" ||
      { echo "check-worlds: $k is not a number at $t threads" >&2; fail=1; }
  done
  os=$(key os_threads "$out")
  if [ -d /proc/self/task ]; then
    # the main thread and the pool's, at least
    if ! echo "$os" | grep -q -E '^[0-9]+$' || [ "$os" -le "$t" ]; then
      echo "check-worlds: os_threads is '$os' at $t threads" >&2
      fail=1
    fi
  elif [ "$os" != null ]; then
    echo "check-worlds: os_threads is '$os' without /proc" >&2
    fail=1
  fi
  if ! awk -v w="$(key work_ms_median "$out")" \
      -v s="$(key span_ms_median "$out")" \
      'BEGIN { exit !(s > 0 && s <= w) }'; then
    echo "check-worlds: span is not in (0, work] at $t threads" >&2
    fail=1
  fi
done
one=$(key checksum "$tmp/t1")
three=$(key checksum "$tmp/t3")
if [ -z "$one" ] || [ "$one" != "$three" ]; then
  echo "check-worlds: checksum $one at 1 thread, $three at 3" >&2
  fail=1
fi

if "$bench" --json --worlds 50 --entities 5000 --ticks 3 --threads 2 \
    --measure-cpu off >"$tmp/off" 2>"$tmp/err"; then
  for k in work_ms_median span_ms_median predicted_speedup; do
    [ "$(key "$k" "$tmp/off")" = null ] ||
      { echo "check-worlds: $k is not null with --measure-cpu off" >&2; fail=1; }
  done
  [ "$(key checksum "$tmp/off")" = "$one" ] ||
    { echo "check-worlds: --measure-cpu off changed the events" >&2; fail=1; }
else
  echo "check-worlds: the --measure-cpu off run failed:" >&2
  cat "$tmp/err" >&2
  fail=1
fi

[ "$fail" -eq 0 ] && echo "check-worlds: ok"
exit "$fail"
