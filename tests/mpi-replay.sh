#!/usr/bin/env bash
# mpi-replay.sh: one world over MPI ranks prints what one process prints.
#
# usage: mpi-replay.sh PATH/TO/aoi-replay GEN [TRACE_DIR ...]
#
# PATH/TO/aoi-replay is a -DAOI_MPI=ON build. For every TRACE_DIR/*.trace
# (a directory that is absent is skipped, and said so) and the traces
# `GEN SEED` and `GEN --policies SEED` write for seeds 1 to
# ${AOI_MPI_SEEDS:-8}, the reference is the plain replay (one process,
# --threads 1 --shards 1), or with AOI_REPLAY_REFERENCE set to a
# model-replay binary the model's replay (the differential test's
# oracle, written from the spec); then the trace runs under mpirun at 1, 2, 3 and
# 4 ranks (oversubscribed: the ranks need not have a core each), with each
# rank's world at 1 thread and 1 shard (the strips weighed every 16 ticks,
# the default) and at 2 threads and 3 shards (weighed every 2 ticks, so
# that they move often), and stdout, stderr and the exit status must equal
# the reference's.
set -u
usage="usage: mpi-replay.sh PATH/TO/aoi-replay GEN [TRACE_DIR ...]"
aoi_replay=${1:?$usage}
gen=${2:?$usage}
shift 2
seeds=${AOI_MPI_SEEDS:-8}
mpirun=(mpirun --oversubscribe --quiet)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
# every run under a time limit: expect_replay runs $replay ARGUMENTS
replay=timeout
# $tmp, $pass, $fail and expect_replay (replay-check.sh)
# shellcheck source=replay-check.sh
. "$(dirname "$0")/replay-check.sh"

traces=()
for dir in "$@"; do
  if [ ! -d "$dir" ]; then
    echo "skipped: no $dir"
    continue
  fi
  for trace in "$dir"/*.trace; do
    [ -e "$trace" ] && traces+=("$trace")
  done
done
for seed in $(seq 1 "$seeds"); do
  for option in "" --policies; do
    # shellcheck disable=SC2086
    "$gen" $option "$seed" >"$tmp/gen$option-$seed.trace" || {
      echo "FAIL gen-trace $option $seed"
      exit 1
    }
    traces+=("$tmp/gen$option-$seed.trace")
  done
done

for trace in "${traces[@]}"; do
  name=$(basename "$trace" .trace)
  "${AOI_REPLAY_REFERENCE:-$aoi_replay}" --threads 1 --shards 1 "$trace" \
    >"$tmp/want.out" 2>"$tmp/want.err"
  want=$?
  if [ "$want" != 0 ] && [ "$want" != 1 ]; then
    echo "FAIL $name: the reference exited $want"
    fail=$((fail + 1))
    continue
  fi
  for ranks in 1 2 3 4; do
    for layout in "1 1 16" "2 3 2"; do
      set -- $layout
      expect_replay "$name: $ranks ranks, --threads $1 --shards $2, strips \
weighed every $3 ticks" "$want" "$tmp/want.out" "$tmp/want.err" 120 \
        env AOI_REPLAY_MPI_REBALANCE="$3" "${mpirun[@]}" \
        -x AOI_REPLAY_MPI_REBALANCE -np "$ranks" \
        "$aoi_replay" --mpi --threads "$1" --shards "$2" "$trace"
    done
  done
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
