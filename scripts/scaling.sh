#!/bin/sh
# scaling.sh: how a tick scales with threads, measured and predicted, on
# three workloads, as markdown tables for docs/performance.md.
#
# usage: scripts/scaling.sh [--entities N] [--ticks N] [--threads LIST]
#                           [--build DIR] [--instance-shards N] [--seed N]
#                           [--batch]
#
# The workloads, each run once per thread count T of --threads (default
# 1,2,4,8,16,32):
#   uniform     the walking crowd, N entities (--entities, default
#               1,000,000), T shards
#   hotspot     three quarters of the crowd converging on three sites, N
#               entities, T shards
#   instances   N / 1000 worlds of 100 entities each (1,000 worlds at the
#               default N), on one pool of T threads, ticked together by
#               aoi_tick_many (aoi-bench --worlds), one lane each;
#               --instance-shards shards each (default 1)
# With --batch, each tick's moves go to the engine in one aoi_move_many
# (aoi-bench --batch), which a pool of 3 threads or more, each with a
# core, spreads over its threads. The hotspot warms up for 20 ticks before it is timed: its crowd gathers,
# and the shard cuts follow it every 16 ticks (the library's
# rebalance_interval), so a run timed from the start would mostly time
# shards the rebalancer had not yet evened.
#
# Each row runs aoi-bench twice, one process each: with --measure-cpu off
# for the tick, so that the CPU clocks cost it nothing, and with it on for
# work and span. The columns:
#   tick ms      the median tick (aoi_tick, or aoi_tick_many), clocks off
#   speedup      the first row's tick / this row's
#   work ms      the median tick's CPU time on every thread together
#   span ms      its critical path (aoi-bench --help: work and span)
#   predicted    the first row's tick / this row's span: the speedup as
#                many free cores as threads would give
#   work ratio   this row's work / the first row's: what the threads add
#   os threads   the process's threads during the tick (/proc/self/task):
#                main, the engine's, and for one world T - 1 delivery
#                threads (many worlds deliver on the pool's)
#   tick, clocks on   the median tick of the run with the CPU clocks on:
#                near the first tick column unless the clocks cost much
#   frame ms     the median frame (submit + tick + delivery), clocks off
#   frame speedup  the first row's frame / this row's
# The first row is the first of --threads, 1 by default. Needs only a
# POSIX shell, sed and awk; aoi-bench must be built (--build, default
# build).
set -u

entities=1000000
ticks=5
threads=1,2,4,8,16,32
build=build
instance_shards=1
seed=12345
batch=

die() {
  echo "scaling: $*" >&2
  exit 2
}

usage() {
  sed -n '2,/^set -u$/p' "$0" | sed -e '/^set -u$/d' -e 's/^# \{0,1\}//'
}

# number FLAG VALUE: VALUE is a non-negative integer, else a usage error.
number() {
  case $2 in
  '' | *[!0-9]*) die "$1: '$2' is not a non-negative integer" ;;
  esac
}

while [ $# -gt 0 ]; do
  case $1 in
  --entities | --ticks | --threads | --build | --instance-shards | --seed)
    [ $# -ge 2 ] || die "$1 needs a value"
    case $1 in
    --entities) number "$1" "$2"; entities=$2 ;;
    --ticks) number "$1" "$2"; ticks=$2 ;;
    --threads) threads=$2 ;;
    --build) build=$2 ;;
    --instance-shards) number "$1" "$2"; instance_shards=$2 ;;
    --seed) number "$1" "$2"; seed=$2 ;;
    esac
    shift 2
    ;;
  --batch)
    batch=--batch
    shift
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  *) die "unknown option '$1' (--help lists them)" ;;
  esac
done
[ "$entities" -ge 1 ] || die "--entities must be at least 1"
[ "$ticks" -ge 1 ] || die "--ticks must be at least 1"
case $threads in
'' | ,* | *, | *,,* | *[!0-9,]*)
  die "--threads: '$threads' is not a comma-separated list of integers" ;;
esac
bench=$build/aoi-bench
[ -x "$bench" ] || die "no $bench: build it first (or give --build DIR)"

# The instances: 100 entities a world, a world per 1,000 of --entities.
worlds=$((entities / 1000))
[ "$worlds" -ge 1 ] || worlds=1
instance_entities=$((worlds * 100))

cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?')
model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo \
  2>/dev/null | head -n 1)
[ -n "$model" ] || model="an unknown CPU"
commit=$(git -C "$(dirname "$0")" rev-parse --short=12 HEAD 2>/dev/null ||
  echo unknown)
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' \
  "$build/CMakeCache.txt" 2>/dev/null)
[ -n "$build_type" ] || build_type="unknown"

echo "Machine: $cpus CPUs, $model. Commit \`$commit\`, $build_type build;"
echo "Each run: --ticks $ticks (measured, after one warm-up tick; the hotspot's"
echo "after 20), --seed $seed."

# grouped N: N with its thousands grouped by commas (1,000,000).
grouped() {
  awk -v n="$1" 'BEGIN {
    while (length(n) > 3) {
      tail = "," substr(n, length(n) - 2) tail
      n = substr(n, 1, length(n) - 3)
    }
    print n tail
  }'
}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# key NAME FILE: the value of "NAME" in the JSON line in FILE.
key() {
  sed -n "s/.*[{,]\"$1\":\\([^,}]*\\).*/\\1/p" "$2" | head -n 1
}

# run FILE ARGS...: one aoi-bench --json run into FILE; stops the script
# with the bench's message when it fails.
run() {
  out=$1
  shift
  # shellcheck disable=SC2086
  if ! "$bench" --json --no-baseline $batch "$@" >"$out" 2>"$tmp/err"; then
    echo "scaling: $bench $* failed:" >&2
    cat "$tmp/err" >&2
    exit 1
  fi
}

# workload TITLE SHARDS ARGS...: one table, a row per thread count; SHARDS
# is a number, or "threads" for as many shards as threads.
workload() {
  title=$1 shards=$2
  shift 2
  : >"$tmp/rows"
  for t in $(echo "$threads" | tr ',' ' '); do
    s=$shards
    [ "$s" = threads ] && s=$t
    run "$tmp/off" "$@" --threads "$t" --shards "$s" --ticks "$ticks" \
      --seed "$seed" --measure-cpu off
    run "$tmp/on" "$@" --threads "$t" --shards "$s" --ticks "$ticks" \
      --seed "$seed" --measure-cpu on
    echo "$(key threads "$tmp/off") $(key tick_ms_median "$tmp/off")" \
      "$(key work_ms_median "$tmp/on") $(key span_ms_median "$tmp/on")" \
      "$(key os_threads "$tmp/on") $(key tick_ms_median "$tmp/on")" \
      "$(key frame_ms_median "$tmp/off")" >>"$tmp/rows"
  done
  echo
  echo "### $title"
  echo
  echo "| threads | tick ms | speedup | work ms | span ms | predicted |" \
    "work ratio | os threads | tick, clocks on | frame ms | frame speedup |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  awk '
    function ms(x) {
      if (x == "null" || x == "") return "-"
      if (x + 0 >= 100) return sprintf("%.0f", x)
      if (x + 0 >= 10) return sprintf("%.1f", x)
      return sprintf("%.2f", x)
    }
    function times(a, b) {
      if (a == "null" || b == "null" || b + 0 <= 0) return "-"
      return sprintf("%.2fx", a / b)
    }
    NR == 1 { tick1 = $2; work1 = $3; frame1 = $7 }
    {
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
             $1, ms($2), times(tick1, $2), ms($3), ms($4), times(tick1, $4),
             times($3, work1), ($5 == "null" ? "-" : $5), ms($6), ms($7),
             times(frame1, $7)
    }' "$tmp/rows"
  echo
  echo '```sh'
  echo "$bench --json --no-baseline${batch:+ $batch} $* --threads T --shards" \
    "$([ "$shards" = threads ] && echo T || echo "$shards")" \
    "--ticks $ticks --seed $seed --measure-cpu off|on"
  echo '```'
}

workload "uniform, $(grouped "$entities") entities, shards = threads" \
  threads --scenario uniform --entities "$entities"
workload "hotspot, $(grouped "$entities") entities, shards = threads" \
  threads --scenario hotspot --entities "$entities" --warmup 20
workload "instances: $(grouped "$worlds") worlds of 100 entities on one pool, shards per world $instance_shards" \
  "$instance_shards" --scenario uniform --entities "$instance_entities" \
  --worlds "$worlds"
