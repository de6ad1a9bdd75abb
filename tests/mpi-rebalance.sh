#!/usr/bin/env bash
# mpi-rebalance.sh: the strips follow a gathering crowd, and the events
# stay those of one world.
#
# usage: mpi-rebalance.sh PATH/TO/aoi-bench   (a -DAOI_MPI=ON build)
#
# Runs aoi-bench's hotspot crowd (4,000 entities converging on three
# sites, 40 ticks) on one plain world, then on a world over 3 and over 4
# ranks that weighs its strips every 2 ticks, and checks that the strips
# moved at least once in each and that the checksums of every event equal
# the plain world's.
set -u
bench=${1:?usage: mpi-rebalance.sh PATH/TO/aoi-bench}
mpirun=(mpirun --oversubscribe --quiet --bind-to none)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
args=(--scenario hotspot --entities 4000 --ticks 40 --threads 1)
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([0-9a-f]*\).*/\1/p"; }
want=$("${mpirun[@]}" -np 1 "$bench" --mpi "${args[@]}" --plain | field checksum)
[ -n "$want" ] || { echo "FAIL: the plain run printed no checksum"; exit 1; }
fail=0
for ranks in 3 4; do
  out=$(timeout 120 "${mpirun[@]}" -np "$ranks" "$bench" --mpi "${args[@]}" \
    --rebalance 2)
  got=$(echo "$out" | field checksum)
  moved=$(echo "$out" | field rebalances)
  echo "$ranks ranks: rebalances ${moved:-?}, checksum ${got:-?} (want $want)"
  if [ "$got" != "$want" ] || [ -z "$moved" ] || [ "$moved" = 0 ]; then
    echo "FAIL: $ranks ranks"
    fail=1
  fi
done
[ "$fail" = 0 ] && echo passed
exit "$fail"
