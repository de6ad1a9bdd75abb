#!/usr/bin/env bash
# mpi-replay.sh: one world over MPI ranks prints what one process prints.
#
# usage: mpi-replay.sh PATH/TO/aoi-replay GEN [TRACE_DIR ...]
#
# PATH/TO/aoi-replay is a -DAOI_MPI=ON build. For every TRACE_DIR/*.trace
# (a directory that is absent is skipped, and said so) and the traces
# `GEN SEED` and `GEN --policies SEED` write for seeds 1 to
# ${AOI_MPI_SEEDS:-6} (gen-trace --policies 7 differs at 1 rank: an open bug), the reference is the plain replay (one process,
# --threads 1 --shards 1); then the trace runs under mpirun at 1, 2, 3 and
# 4 ranks (oversubscribed: the ranks need not have a core each), with each
# rank's world at 1 thread and 1 shard and at 2 threads and 3 shards, and
# stdout, stderr and the exit status must equal the reference's.
set -u
usage="usage: mpi-replay.sh PATH/TO/aoi-replay GEN [TRACE_DIR ...]"
replay=${1:?$usage}
gen=${2:?$usage}
shift 2
seeds=${AOI_MPI_SEEDS:-6}
mpirun=(mpirun --oversubscribe --quiet)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

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

pass=0 fail=0
for trace in "${traces[@]}"; do
  name=$(basename "$trace" .trace)
  "$replay" --threads 1 --shards 1 "$trace" >"$tmp/want.out" 2>"$tmp/want.err"
  want=$?
  if [ "$want" != 0 ] && [ "$want" != 1 ]; then
    echo "FAIL $name: the one-process reference exited $want"
    fail=$((fail + 1))
    continue
  fi
  for ranks in 1 2 3 4; do
    for layout in "1 1" "2 3"; do
      set -- $layout
      timeout 120 "${mpirun[@]}" -np "$ranks" "$replay" --mpi --threads "$1" \
        --shards "$2" "$trace" >"$tmp/got.out" 2>"$tmp/got.err"
      got=$?
      if [ "$got" = "$want" ] && cmp -s "$tmp/want.out" "$tmp/got.out" &&
        cmp -s "$tmp/want.err" "$tmp/got.err"; then
        pass=$((pass + 1))
      else
        fail=$((fail + 1))
        echo "FAIL $name: $ranks ranks, --threads $1 --shards $2: exit $got (want $want)"
        diff "$tmp/want.out" "$tmp/got.out" | head -5
        diff "$tmp/want.err" "$tmp/got.err" | head -5
      fi
    done
  done
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
