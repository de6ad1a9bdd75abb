#!/bin/sh
# check-scaling.sh: scripts/scaling.sh runs and prints its three markdown
# tables, a row per thread count, with the machine above them.
#
# usage: check-scaling.sh PATH/TO/scaling.sh BUILD_DIR
#
# A tiny sweep (4,000 entities, 2 ticks, 1 and 2 threads); no timing is
# checked, only that each table has its header and a row per thread count
# whose measured columns are numbers.
set -u

script=${1:?usage: check-scaling.sh PATH/TO/scaling.sh BUILD_DIR}
build=${2:?usage: check-scaling.sh PATH/TO/scaling.sh BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

if ! sh "$script" --build "$build" --entities 4000 --ticks 2 --threads 1,2 \
    >"$tmp/out" 2>"$tmp/err"; then
  echo "check-scaling: scaling.sh failed:" >&2
  cat "$tmp/err" >&2
  exit 1
fi
grep -q '^Machine: ' "$tmp/out" ||
  { echo "check-scaling: no machine line" >&2; fail=1; }
n=$(grep -c '^### ' "$tmp/out")
[ "$n" -eq 3 ] || { echo "check-scaling: $n tables, expected 3" >&2; fail=1; }
n=$(grep -c '^| threads | tick ms | speedup | work ms | span ms | predicted |' \
  "$tmp/out")
[ "$n" -eq 3 ] || { echo "check-scaling: $n table headers, expected 3" >&2; fail=1; }
# a row: threads, then tick, speedup, work, span, predicted and work ratio
# as numbers (an x after the ratios), os threads, the tick with clocks on,
# the frame and its speedup
value='[0-9][0-9.]*x?'
row="^\\| [12] \\| $value \\| $value \\| $value \\| $value \\| $value \\| $value \\| ([0-9]+|-) \\| $value \\| $value \\| $value \\|\$"
n=$(grep -c -E "$row" "$tmp/out")
[ "$n" -eq 6 ] || { echo "check-scaling: $n well-formed rows, expected 6" >&2; fail=1; }
if [ "$fail" -ne 0 ]; then
  cat "$tmp/out" >&2
  exit 1
fi
echo "check-scaling: ok"
