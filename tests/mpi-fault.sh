#!/usr/bin/env bash
# mpi-fault.sh: a rank that dies mid-run makes the others stop with an
# error, without hanging.
#
# usage: mpi-fault.sh PATH/TO/aoi-replay GEN
#
# Replays a generated trace at 3 ranks, once with rank 1 killed (SIGKILL)
# before its 5th tick (AOI_REPLAY_KILL), once with it hung there
# (AOI_REPLAY_HANG), and checks that each run ends with a non-zero status
# in under 10 seconds: the MPI runtime stops the job when a process dies;
# a rank that stops answering makes the others' ticks fail with AOI_EPEER
# at their timeout (AOI_REPLAY_MPI_TIMEOUT, 2 s here), which they say.
set -u
replay=${1:?usage: mpi-fault.sh PATH/TO/aoi-replay GEN}
gen=${2:?usage: mpi-fault.sh PATH/TO/aoi-replay GEN}
mpirun=(mpirun --oversubscribe --quiet)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" 3 >"$tmp/t.trace" || exit 1
fail=0

# run LABEL VAR=RANK:TICK: the replay at 3 ranks with that fault; must end
# with a non-zero status in under 10 s. Its stderr is in $tmp/err.
run() {
  local label=$1 fault=$2 start rc ms
  start=$(date +%s%N)
  env "$fault" AOI_REPLAY_MPI_TIMEOUT=2000 timeout 30 "${mpirun[@]}" \
    -x "${fault%%=*}" -x AOI_REPLAY_MPI_TIMEOUT -np 3 "$replay" --mpi \
    "$tmp/t.trace" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  echo "$label: exit $rc after $ms ms"
  head -3 "$tmp/err"
  if [ "$rc" = 0 ] || [ "$rc" = 124 ] || [ "$ms" -ge 10000 ]; then
    echo "FAIL $label: want a non-zero exit within 10 s"
    fail=1
    return 1
  fi
}

# a rank that dies: the MPI runtime stops the job
run "rank 1 killed before tick 5" AOI_REPLAY_KILL=1:5
# a rank that stops answering: the others' ticks fail with AOI_EPEER at
# their timeout (2 s here), and the replay aborts the job
if run "rank 1 hung before tick 5" AOI_REPLAY_HANG=1:5 &&
  ! grep -q AOI_EPEER "$tmp/err"; then
  echo "FAIL: the hung rank's peers did not report AOI_EPEER"
  fail=1
fi
[ "$fail" = 0 ] && echo passed
exit "$fail"
