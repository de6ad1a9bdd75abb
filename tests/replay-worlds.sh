#!/usr/bin/env bash
# replay-worlds.sh: K worlds ticked together print what one world prints.
#
# usage: replay-worlds.sh [--quick] PATH/TO/aoi-replay GEN [TRACE_DIR...]
#
# Replays the traces GEN (a gen-trace binary) writes (v1 at seeds 1 to 3,
# v2 with --policies at seeds 1 and 2) and every TRACE_DIR/*.trace, with
# plain `aoi-replay TRACE` (one world of its own, ticked by aoi_tick) as
# the reference, then with --worlds K --threads T: K worlds on one shared
# pool of T threads (--run pool) or ticked on the calling thread (--run
# caller), all ticked by one aoi_tick_many a tick; and once a trace with
# --async (aoi_tick_many_begin and _end) and with --run own (K private
# pools). Checks that stdout, stderr and the exit status equal the
# reference's; aoi-replay itself checks that every world printed what the
# first did, and names the first that did not. The reference must exit 0
# or 1 (2 or a signal means the trace was not replayed).
#
# The first trace of each version runs every K in 2, 5, 17 with every T
# in 1, 2, 3, 8, both ways; the others a few of those. A TRACE_DIR that is
# not there (the shared traces live outside this tree) is named and left
# out. --quick (the ThreadSanitizer build) keeps one generated trace of
# each version, with the few runs, and runs the TRACE_DIR traces on 5
# worlds, not 17, of 8 lanes.
set -u

usage="usage: replay-worlds.sh [--quick] PATH/TO/aoi-replay GEN [TRACE_DIR...]"
quick=0
if [ "${1:-}" = --quick ]; then
  quick=1
  shift
fi
replay=${1:?$usage}
gen=${2:?$usage}
shift 2
dirs=("$@")

# The runs, as aoi-replay's options: every one, and a few.
every=()
for worlds in 2 5 17; do
  for threads in 1 2 3 8; do
    for run in pool caller; do
      every+=("--worlds $worlds --threads $threads --run $run")
    done
  done
done
every+=("--worlds 5 --threads 3 --async" "--worlds 3 --threads 2 --run own")
few=("--worlds 2 --threads 1 --run pool" "--worlds 17 --threads 8 --run pool"
  "--worlds 5 --threads 3 --run caller" "--worlds 5 --threads 3 --async"
  "--worlds 3 --threads 2 --run own")
# --quick's few for TRACE_DIR traces: 17 worlds of 8 lanes cost the most.
light=("${few[@]}")
light[1]="--worlds 5 --threads 8 --run pool"

# $tmp, $pass, $fail and expect_replay (replay-check.sh)
# shellcheck source=replay-check.sh
. "$(dirname "$0")/replay-check.sh"

traces=() # "RUNS PATH": RUNS is every, few or light
mkdir "$tmp/gen"
v1_seeds="1 2 3"
v2_seeds="1 2"
[ "$quick" = 1 ] && v1_seeds=1 && v2_seeds=1
for option in "" --policies; do
  seeds=$v1_seeds
  [ -n "$option" ] && seeds=$v2_seeds
  for seed in $seeds; do
    file="$tmp/gen/gen${option:+-v2}-$seed.trace"
    # shellcheck disable=SC2086
    "$gen" $option "$seed" >"$file"
    rc=$?
    if [ "$rc" != 0 ]; then
      fail=$((fail + 1))
      echo "FAIL gen-trace $option $seed: exit $rc"
    elif [ "$seed" = 1 ] && [ "$quick" = 0 ]; then
      traces+=("every $file")
    else
      traces+=("few $file")
    fi
  done
done
for dir in "${dirs[@]}"; do
  if [ ! -d "$dir" ]; then
    echo "skipped: no $dir"
    continue
  fi
  runs=few
  [ "$quick" = 1 ] && runs=light
  for trace in "$dir"/*.trace; do
    [ -e "$trace" ] && traces+=("$runs $trace")
  done
done

for entry in "${traces[@]}"; do
  read -r runs trace <<<"$entry"
  name=$(basename "$trace" .trace)
  "$replay" "$trace" >"$tmp/ref.out" 2>"$tmp/ref.err"
  ref_rc=$?
  if [ "$ref_rc" != 0 ] && [ "$ref_rc" != 1 ]; then
    fail=$((fail + 1))
    echo "FAIL $name (one world): reference exit $ref_rc"
    head -3 "$tmp/ref.err"
    continue
  fi
  case $runs in
  every) options=("${every[@]}") ;;
  few) options=("${few[@]}") ;;
  *) options=("${light[@]}") ;;
  esac
  for option in "${options[@]}"; do
    # shellcheck disable=SC2086
    expect_replay "$name ($option)" "$ref_rc" "$tmp/ref.out" "$tmp/ref.err" \
      $option "$trace"
  done
done
if [ "${#traces[@]}" = 0 ]; then
  fail=$((fail + 1))
  echo "FAIL no trace"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
