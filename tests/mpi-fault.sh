#!/usr/bin/env bash
# mpi-fault.sh: a rank that dies mid-run makes the others stop with an
# error, without hanging.
#
# usage: mpi-fault.sh PATH/TO/aoi-replay GEN
#
# Replays a generated trace at 3 ranks with rank 1 killed (SIGKILL) before
# its 5th tick (AOI_REPLAY_KILL), and checks that the run ends with a
# non-zero status in under 10 seconds: by the MPI runtime stopping the job,
# or by the other ranks' ticks failing with AOI_EPEER at their timeout.
set -u
replay=${1:?usage: mpi-fault.sh PATH/TO/aoi-replay GEN}
gen=${2:?usage: mpi-fault.sh PATH/TO/aoi-replay GEN}
mpirun=(mpirun --oversubscribe --quiet)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" 3 >"$tmp/t.trace" || exit 1
start=$(date +%s%N)
AOI_REPLAY_KILL=1:5 timeout 30 "${mpirun[@]}" -x AOI_REPLAY_KILL -np 3 \
  "$replay" --mpi "$tmp/t.trace" >"$tmp/out" 2>"$tmp/err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
echo "killed rank 1 before tick 5: exit $rc after $ms ms"
head -3 "$tmp/err"
if [ "$rc" = 0 ] || [ "$rc" = 124 ] || [ "$ms" -ge 10000 ]; then
  echo "FAIL: want a non-zero exit within 10 s"
  exit 1
fi
echo "passed"
