#!/usr/bin/env bash
# shared-traces.sh: the shared traces of TRACE_DIR through REPLAY (aoi-replay
# or model-replay), by SHARED_DIR's own check-traces.sh. The shared
# directory lives outside this tree (AOI_SHARED_DIR): when it or TRACE_DIR
# is not there, says so and exits 77, which ctest reports as skipped.
#
# usage: shared-traces.sh SHARED_DIR REPLAY TRACE_DIR
set -u
usage="usage: shared-traces.sh SHARED_DIR REPLAY TRACE_DIR"
shared=${1:?$usage}
replay=${2:?$usage}
dir=${3:?$usage}
if [ ! -f "$shared/check-traces.sh" ]; then
  echo "skipped: no $shared/check-traces.sh (AOI_SHARED_DIR names the shared directory)"
  exit 77
fi
if [ ! -d "$dir" ]; then
  echo "skipped: no $dir"
  exit 77
fi
exec bash "$shared/check-traces.sh" "$replay" "$dir"
