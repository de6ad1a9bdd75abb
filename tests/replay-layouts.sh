#!/usr/bin/env bash
# replay-layouts.sh: every thread and shard layout prints the same bytes.
#
# usage: replay-layouts.sh PATH/TO/aoi-replay TRACE_DIR [GEN [GEN_OPTION]]
#
# Replays every TRACE_DIR/*.trace, and with GEN (a gen-trace binary) the
# traces `GEN [GEN_OPTION] 1` .. `GEN [GEN_OPTION] 6` write (GEN_OPTION:
# --policies for v2 traces), with --threads 1 --shards 1 as the
# reference, then with every threads x shards layout below, and checks that
# stdout, stderr and the exit status equal the reference's. The reference
# itself must exit 0 or 1 (2 or a signal means the trace was not replayed).
#
# With AOI_REPLAY_REFERENCE set to a model-replay binary, that replay of
# the model is the reference instead, and the layouts are threads x shards
# 1 x 1, 2 x 3 and 4 x 16: the engine against the model on whole traces,
# through the trace reader and the replay.
set -u

usage="usage: replay-layouts.sh PATH/TO/aoi-replay TRACE_DIR [GEN [GEN_OPTION]]"
replay=${1:?$usage}
dir=${2:?$usage}
gen=${3:-}
gen_option=${4:-}
layouts=()
for threads in 1 2 3 4; do
  for shards in 1 2 3 4 5 7 9 16; do
    layouts+=("$threads $shards")
  done
done
reference=${AOI_REPLAY_REFERENCE:-}
[ -n "$reference" ] && layouts=("1 1" "2 3" "4 16")

# $tmp, $pass, $fail and expect_replay (replay-check.sh)
# shellcheck source=replay-check.sh
. "$(dirname "$0")/replay-check.sh"

traces=()
gen_fail=0
# The shared traces live outside this tree: without them, say so.
[ -d "$dir" ] || echo "skipped: no $dir${gen:+ (the generated traces only)}"
for trace in "$dir"/*.trace; do
  [ -e "$trace" ] && traces+=("$trace")
done
if [ -n "$gen" ]; then
  mkdir "$tmp/gen"
  for seed in 1 2 3 4 5 6; do
    # shellcheck disable=SC2086
    "$gen" $gen_option "$seed" >"$tmp/gen/gen-$seed.trace"
    rc=$?
    if [ "$rc" = 0 ]; then
      traces+=("$tmp/gen/gen-$seed.trace")
    else
      gen_fail=$((gen_fail + 1))
      echo "FAIL gen-trace $gen_option $seed: exit $rc"
    fi
  done
fi

fail=$gen_fail
if [ "${#traces[@]}" = 0 ]; then
  fail=$((fail + 1))
  echo "FAIL no trace in $dir"
fi
for trace in "${traces[@]}"; do
  name=$(basename "$trace" .trace)
  "${reference:-$replay}" --threads 1 --shards 1 "$trace" >"$tmp/ref.out" \
    2>"$tmp/ref.err"
  ref_rc=$?
  if [ "$ref_rc" != 0 ] && [ "$ref_rc" != 1 ]; then
    fail=$((fail + 1))
    echo "FAIL $name (${reference:+model, }--threads 1 --shards 1): reference exit $ref_rc"
    head -3 "$tmp/ref.err"
    continue
  fi
  for pair in "${layouts[@]}"; do
    read -r threads shards <<<"$pair"
    expect_replay "$name (--threads $threads --shards $shards)" "$ref_rc" \
      "$tmp/ref.out" "$tmp/ref.err" --threads "$threads" --shards "$shards" \
      "$trace"
  done
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
