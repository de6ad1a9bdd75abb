#!/bin/sh
# check-json.sh: `aoi-bench --json` prints one JSON object per run, one per
# line, each with the keys that scripts rely on, and nothing else on stdout.
#
# usage: check-json.sh PATH/TO/aoi-bench
#
# Two scenarios at two thread counts must give four lines; each line must be
# one flat object ({...} with no nested braces) holding every required key
# with a number (or null, or a string where one is due). A run with
# --no-baseline must carry the baseline keys as null, a scenario with no
# odd part the cliff keys; the four cliff scenarios must carry them as
# numbers, with the odd part's parameters. Every line carries every
# algorithm's keys (algo_NAME_*), numbers for those --baseline ran and null
# for the others, and "baseline" names the first. "refs" is false, but
# true in a run with --refs, whose checksums must equal those of the same
# run without it (moves by reference are moves); likewise "batch" and
# "slots" (delivery by aoi_deliver_slots), and
# "pin" with --pin on (workers bound to CPUs). A run
# with --sparse-ids says so and agrees with its baseline. Where python3 exists,
# every line must also parse as JSON. No timing is checked.
set -u

bench=${1:?usage: check-json.sh PATH/TO/aoi-bench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

numeric="entities threads shards ticks tick_ms_median tick_ms_p99 tick_ms_max
  updates_per_s events_per_s imbalance peak_rss_bytes bytes_per_entity
  allocs_per_tick drain_ms_median submit_ms_median crowd_ms_median
  apply_ms_median
  exchange_ms_median compute_ms_median handoffs_per_tick ghosts_per_tick
  speedup efficiency baseline_tick_ms_median baseline_speedup max_radius
  plain_tick_ms_median plain_submit_ms_median cliff_ratio cliff_submit_ratio
  outlier_x outlier_y mix_share mix_radius flood baseline_cliff_ratio
  tower_side walk_share cap spectator_cap worlds world_entities
  world_empty_bytes work_ms_median span_ms_median predicted_speedup
  os_threads"
algo_keys="tick_ms_median submit_ms_median frame_ms_median events_per_tick
  bytes_per_entity"
for a in brute ninegrid tower xlist; do
  for k in $algo_keys; do
    numeric="$numeric algo_${a}_$k"
  done
done

# check FILE LINES: FILE holds LINES well-formed lines with every key.
check() {
  file=$1 want=$2
  lines=$(wc -l <"$file")
  if [ "$lines" -ne "$want" ]; then
    echo "check-json: $lines lines, expected $want" >&2
    fail=1
  fi
  bad=$(grep -c -v '^{[^{}]*}$' "$file")
  if [ "$bad" -ne 0 ]; then
    echo "check-json: $bad lines are not one flat JSON object" >&2
    fail=1
  fi
  for key in $numeric; do
    n=$(grep -c -E "[{,]\"$key\":(-?[0-9][0-9.eE+-]*|null)[,}]" "$file")
    if [ "$n" -ne "$want" ]; then
      echo "check-json: key $key is a number or null in $n of $want lines" >&2
      fail=1
    fi
  done
  n=$(grep -c -E '[{,]"scenario":"[a-z-]+"[,}]' "$file")
  [ "$n" -eq "$want" ] || { echo "check-json: bad scenario key" >&2; fail=1; }
  n=$(grep -c -E '[{,]"checksum":"[0-9a-f]{16}"[,}]' "$file")
  [ "$n" -eq "$want" ] || { echo "check-json: bad checksum key" >&2; fail=1; }
  n=$(grep -c -E '[{,]"plain_checksum_match":(true|false|null)[,}]' "$file")
  [ "$n" -eq "$want" ] ||
    { echo "check-json: bad plain_checksum_match key" >&2; fail=1; }
  n=$(grep -c -E '[{,]"refs":(true|false)[,}]' "$file")
  [ "$n" -eq "$want" ] || { echo "check-json: bad refs key" >&2; fail=1; }
  n=$(grep -c -E '[{,]"batch":(true|false)[,}]' "$file")
  [ "$n" -eq "$want" ] || { echo "check-json: bad batch key" >&2; fail=1; }
  n=$(grep -c -E '[{,]"slots":(true|false)[,}]' "$file")
  [ "$n" -eq "$want" ] || { echo "check-json: bad slots key" >&2; fail=1; }
  n=$(grep -c -E '[{,]"pin":(true|false)[,}]' "$file")
  [ "$n" -eq "$want" ] || { echo "check-json: bad pin key" >&2; fail=1; }
  n=$(grep -c -E '[{,]"sparse_ids":(true|false)[,}]' "$file")
  [ "$n" -eq "$want" ] || { echo "check-json: bad sparse_ids key" >&2; fail=1; }
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys
for line in open(sys.argv[1]):
    assert isinstance(json.loads(line), dict)' "$file" ||
      { echo "check-json: python3 cannot parse $file" >&2; fail=1; }
  fi
}

# run_json FILE WHAT ARGS...: aoi-bench --json ARGS into FILE; a failure
# says WHAT failed, with the bench's stderr.
run_json() {
  out=$1 what=$2
  shift 2
  if ! "$bench" --json "$@" >"$out" 2>"$tmp/err"; then
    echo "check-json: $what failed:" >&2
    cat "$tmp/err" >&2
    fail=1
  fi
}

run_json "$tmp/sweep" "the sweep" --scenario uniform,churn --entities 1000 \
  --ticks 4 --threads 1,2 --shards 3
check "$tmp/sweep" 4
# ran FILE LINES BASELINE ALGOS...: the named algorithms' keys are numbers
# (and their checksums match) on every line, the others' null, and
# "baseline" is BASELINE.
ran() {
  file=$1 want=$2 first=$3
  shift 3
  n=$(grep -c "\"baseline\":$first[,}]" "$file")
  [ "$n" -eq "$want" ] || { echo "check-json: baseline is not $first" >&2; fail=1; }
  for a in brute ninegrid tower xlist; do
    case " $* " in
    *" $a "*) value='-?[0-9][0-9.eE+-]*' match=true ;;
    *) value=null match=null ;;
    esac
    for k in $algo_keys; do
      n=$(grep -c -E "[{,]\"algo_${a}_$k\":$value[,}]" "$file")
      [ "$n" -eq "$want" ] ||
        { echo "check-json: algo_${a}_$k is not $value in $n of $want lines" >&2; fail=1; }
    done
    n=$(grep -c -E "[{,]\"algo_${a}_checksum_match\":$match[,}]" "$file")
    [ "$n" -eq "$want" ] ||
      { echo "check-json: algo_${a}_checksum_match is not $match" >&2; fail=1; }
  done
}
ran "$tmp/sweep" 4 '"ninegrid"' ninegrid
for s in uniform churn; do
  n=$(grep -c "\"scenario\":\"$s\"" "$tmp/sweep")
  [ "$n" -eq 2 ] || { echo "check-json: $n lines for $s" >&2; fail=1; }
done
n=$(grep -c '"cliff_ratio":null' "$tmp/sweep")
[ "$n" -eq 4 ] || { echo "check-json: a cliff figure without a cliff" >&2; fail=1; }

# has KEY VALUE SCENARIO: every line of SCENARIO in $tmp/cliffs has KEY as
# VALUE (an extended regex), and there are two of them.
has() {
  n=$(grep "\"scenario\":\"$3\"" "$tmp/cliffs" |
      grep -c -E "[{,]\"$1\":$2[,}]")
  [ "$n" -eq 2 ] ||
    { echo "check-json: $3: $1 is not $2 in $n of 2 lines" >&2; fail=1; }
}
run_json "$tmp/cliffs" "the cliff scenarios" --scenario \
  outlier,spectator,mixed-radius,flood --entities 500 --ticks 3 --threads \
  1,2 --shards 2 --flood 3 --outlier-at 1e5,-2e5 --mix 0.02:4
check "$tmp/cliffs" 8
number='-?[0-9][0-9.eE+-]*'
for s in outlier spectator mixed-radius flood; do
  for key in plain_tick_ms_median plain_submit_ms_median cliff_ratio \
             cliff_submit_ratio baseline_cliff_ratio; do
    has "$key" "$number" "$s"
  done
done
has outlier_x 100000 outlier
has outlier_y -200000 outlier
has plain_checksum_match true outlier
has max_radius 500 spectator
has plain_checksum_match false spectator
has mix_share 0.02 mixed-radius
has mix_radius 40 mixed-radius
has max_radius 40 mixed-radius
has flood 3 flood
has plain_checksum_match true flood
has flood null outlier

# The camera alone capped: a policy run, so no baseline, and the sweep's
# checksums must agree (the bench exits 1 otherwise)
run_json "$tmp/camera" "the --spectator-cap run" --scenario spectator \
  --spectator-cap 5 --max-radius 60 --entities 500 --ticks 3 --threads 1,2 \
  --shards 3
check "$tmp/camera" 2
n=$(grep -c '"spectator_cap":5[,}]' "$tmp/camera")
[ "$n" -eq 2 ] || { echo "check-json: spectator_cap is not 5" >&2; fail=1; }
n=$(grep -c '"cap":0[,}]' "$tmp/camera")
[ "$n" -eq 2 ] || { echo "check-json: cap is not 0 beside spectator_cap" >&2; fail=1; }

run_json "$tmp/algos" "the --baseline run" --baseline tower,xlist,brute \
  --scenario sparse,idle --entities 400 --ticks 2 --threads 1 --tower-side \
  5
check "$tmp/algos" 2
ran "$tmp/algos" 2 '"tower"' tower xlist brute
n=$(grep -c '"tower_side":5[,}]' "$tmp/algos")
[ "$n" -eq 2 ] || { echo "check-json: tower_side is not 5" >&2; fail=1; }
n=$(grep '"scenario":"sparse"' "$tmp/algos" | grep -c '"radius":100[,}]')
[ "$n" -eq 1 ] || { echo "check-json: sparse's radius is not 10 x 10" >&2; fail=1; }

run_json "$tmp/alone" "the --no-baseline run" --no-baseline --scenario idle \
  --entities 500 --ticks 2 --threads 1 --walkers 0.2
check "$tmp/alone" 1
n=$(grep -c '"walk_share":0.2[,}]' "$tmp/alone")
[ "$n" -eq 1 ] || { echo "check-json: walk_share is not 0.2" >&2; fail=1; }
n=$(grep -c '"updates_per_tick":100[,}]' "$tmp/alone")
[ "$n" -eq 1 ] || { echo "check-json: --walkers 0.2 of 500 is not 100 updates" >&2; fail=1; }
grep -q '"baseline_tick_ms_median":null' "$tmp/alone" ||
  { echo "check-json: --no-baseline left a baseline figure" >&2; fail=1; }
ran "$tmp/alone" 1 null

n=$(cat "$tmp/sweep" "$tmp/cliffs" "$tmp/algos" "$tmp/alone" |
    grep -c '"refs":false')
[ "$n" -eq 15 ] ||
  { echo "check-json: refs is not false without --refs" >&2; fail=1; }

# checksums FILE: the scenario, threads and checksum of each line.
checksums() {
  sed -E -e 's/.*"scenario":"([a-z-]+)".*"threads":([0-9]+).*/\1 \2 &/' \
    -e 's/^([^ ]+ [0-9]+) .*"checksum":"([0-9a-f]+)".*/\1 \2/' "$1"
}
"$bench" --json --scenario churn,flood,teleport --entities 400 --ticks 3 \
  --threads 1,2 --shards 3 --flood 3 --no-baseline >"$tmp/ids" 2>/dev/null
# same_moves KEY: the moves by another path (--KEY) give the same events as
# by id, one by one, and the JSON says "KEY":true.
same_moves() {
  run_json "$tmp/$1" "the --$1 run" "--$1" --scenario churn,flood,teleport \
    --entities 400 --ticks 3 --threads 1,2 --shards 3 --flood 3 \
    --no-baseline
  check "$tmp/$1" 6
  n=$(grep -c "\"$1\":true" "$tmp/$1")
  [ "$n" -eq 6 ] ||
    { echo "check-json: $1 is not true with --$1" >&2; fail=1; }
  if [ "$(checksums "$tmp/$1")" != "$(checksums "$tmp/ids")" ]; then
    echo "check-json: moves with --$1 gave other events than by id" >&2
    fail=1
  fi
}
same_moves refs
same_moves batch
same_moves slots # (a delivery, not moves: the same events all the same)

# Workers bound to CPUs (--pin on) give the same events, and say so.
run_json "$tmp/pin" "the --pin on run" --pin on --scenario churn,flood,teleport \
  --entities 400 --ticks 3 --threads 1,2 --shards 3 --flood 3 --no-baseline
check "$tmp/pin" 6
n=$(grep -c '"pin":true' "$tmp/pin")
[ "$n" -eq 6 ] || { echo "check-json: pin is not true with --pin on" >&2; fail=1; }
if [ "$(checksums "$tmp/pin")" != "$(checksums "$tmp/ids")" ]; then
  echo "check-json: workers bound to CPUs gave other events" >&2
  fail=1
fi

# Ids spread over 64 bits (hashed by the id map) give other ids, so other
# checksums, but the same events as the baseline's, which the bench
# checks itself (it exits 1 when they differ).
run_json "$tmp/sparse" "the --sparse-ids run" --sparse-ids --scenario \
  churn,teleport --entities 400 --ticks 3 --threads 1,2 --shards 3
check "$tmp/sparse" 4
n=$(grep -c '"sparse_ids":true' "$tmp/sparse")
[ "$n" -eq 4 ] ||
  { echo "check-json: sparse_ids is not true with --sparse-ids" >&2; fail=1; }
n=$(grep -c '"baseline_checksum_match":true' "$tmp/sparse")
[ "$n" -eq 4 ] ||
  { echo "check-json: --sparse-ids differs from its baseline" >&2; fail=1; }

[ "$fail" -eq 0 ] && echo "check-json: ok"
exit "$fail"
