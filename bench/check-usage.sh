#!/bin/sh
# check-usage.sh: aoi-bench refuses a bad command line with a message on
# stderr and exit status 2, before it runs anything; --help exits 0.
#
# usage: check-usage.sh PATH/TO/aoi-bench
set -u

bench=${1:?usage: check-usage.sh PATH/TO/aoi-bench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect STATUS ARGS...: aoi-bench ARGS exits with STATUS; a refusal says
# why on stderr and prints nothing on stdout.
expect() {
  want=$1
  shift
  "$bench" "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  if [ "$got" -ne "$want" ]; then
    echo "check-usage: aoi-bench $* exited $got, expected $want" >&2
    fail=1
  elif [ "$want" -eq 2 ] && { [ ! -s "$tmp/err" ] || [ -s "$tmp/out" ]; }; then
    echo "check-usage: aoi-bench $*: no message, or output on stdout" >&2
    fail=1
  fi
}

expect 2 --no-such-flag
expect 2 stray-argument
expect 2 --entities
expect 2 --entities 0
expect 2 --entities ten
expect 2 --entities -5
expect 2 --radius -1
expect 2 --radius nan
expect 2 --neighbours 0
expect 2 --ticks 0
expect 2 --threads 1,,2
expect 2 --threads 300
expect 2 --shards 5000
expect 2 --scenario nosuch
expect 2 --scenario uniform,nosuch
expect 2 --moves maybe
expect 2 --pin maybe
expect 2 --shape hexagon
expect 2 --shape cells
expect 2 --shape cells 0
expect 2 --players 1.5
expect 2 --step -1
expect 2 --hysteresis -1
expect 2 --json=yes
expect 2 --verify --no-baseline
expect 2 --max-radius 5
expect 2 --max-radius inf
expect 2 --outlier-at 1
expect 2 --outlier-at ,1
expect 2 --outlier-at 1,nan
expect 2 --outlier-at 1e39,0
expect 2 --mix 0.01
expect 2 --mix 1.5:10
expect 2 --mix 0.01:0
expect 2 --mix 0.01:1e9
expect 2 --flood 0
expect 2 --flood 2000
expect 2 --walkers -0.1
expect 2 --walkers 1.5
expect 2 --walkers nan
expect 2 --spectator-cap -1
expect 2 --spectator-cap x
expect 2 --scenario mixed-radius --max-radius 50
expect 2 --scenario sparse --max-radius 50
expect 2 --baseline
expect 2 --baseline nosuch
expect 2 --baseline tower,,xlist
expect 2 --baseline tower,
expect 2 --baseline tower,tower
expect 2 --baseline ninegrid --no-baseline
expect 2 --baseline brute --entities 20001
expect 2 --baseline all --entities 50000
expect 2 --tower-side 0
expect 2 --tower-side -3
expect 2 --tower-side nan
expect 2 --force-brute=yes
expect 2 --refs=yes
expect 2 --worlds 0
expect 2 --worlds x
expect 2 --worlds 3 --entities 10
expect 2 --worlds 2 --entities 10 --verify
expect 2 --worlds 2 --entities 10 --baseline tower
expect 2 --measure-cpu maybe
expect 0 --baseline xlist,brute --force-brute --scenario sparse --entities 300 \
  --ticks 1 --threads 1 --tower-side 4
expect 0 --scenario mixed-radius --max-radius 50 --mix 0.05:5 --entities 200 \
  --ticks 1 --threads 1
expect 0 --refs --scenario churn --entities 200 --ticks 2 --threads 1
expect 0 --help
grep -q churn "$tmp/out" || { echo "check-usage: --help lists no scenarios" >&2; fail=1; }
for word in mixed-radius --outlier-at --mix --flood --walkers --spectator-cap --max-radius cliff_ratio \
  --baseline --tower-side --force-brute brute ninegrid tower xlist sparse \
  --refs --worlds --measure-cpu work_ms_median span_ms_median \
  predicted_speedup os_threads aoi_tick_many; do
  grep -q -e "$word" "$tmp/out" ||
    { echo "check-usage: --help does not tell of $word" >&2; fail=1; }
done
AOI_THREADS=lots
export AOI_THREADS
expect 2 --entities 10

[ "$fail" -eq 0 ] && echo "check-usage: ok"
exit "$fail"
