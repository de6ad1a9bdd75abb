#!/usr/bin/env bash
# svg-check.sh: aoi-svg writes well-formed standalone SVG with what it draws.
#
# usage: svg-check.sh PATH/TO/aoi-svg [PATH/TO/aoi-bench]
#
# Writes one snapshot and one chart of a small crowd into a temporary
# directory, checks each with `xmllint --noout` (Debian: libxml2-utils;
# without it this fails, it does not skip), then checks with XPath that the
# root is an <svg> in the SVG namespace with a viewBox and that the expected
# elements are there: one rectangle per shard, entity circles, the view
# circle; the three phase bands and the tick line. Then a snapshot drawn
# with another thread count is the same, but for the lines naming threads,
# and a capped one draws at most the cap in view and the rest passed over.
# Last, `scaling` draws a line per algorithm and per engine thread count,
# with a point per size, from aoi-bench JSON lines written here (and from a
# real aoi-bench run at two sizes when its path is given), and refuses input
# that is not aoi-bench's.
set -u

svg=${1:?usage: svg-check.sh PATH/TO/aoi-svg [PATH/TO/aoi-bench]}
bench=${2:-}
if ! command -v xmllint >/dev/null 2>&1; then
  echo "svg-check: xmllint not found; install libxml2-utils" \
       "(scripts/deps.sh test)" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
crowd=(--entities 600 --ticks 20 --shards 4 --seed 3)

# count FILE XPATH: the number of nodes, namespace-blind, that XPATH selects.
count() {
  xmllint --xpath "count($2)" "$1" 2>/dev/null || echo "-1"
}

# expect FILE WHAT XPATH OP N: fails unless count(XPATH) OP N (-eq, -ge, -le).
expect() {
  local got
  got=$(count "$1" "$3")
  if ! [ "$got" "$4" "$5" ] 2>/dev/null; then
    echo "svg-check: $(basename "$1"): $2: found $got, want $4 $5" >&2
    fail=1
  fi
}

for mode in snapshot chart; do
  if ! "$svg" "$mode" "$tmp/$mode.svg" "${crowd[@]}" --threads 2; then
    echo "svg-check: aoi-svg $mode failed" >&2
    exit 1
  fi
  if ! xmllint --noout "$tmp/$mode.svg"; then
    echo "svg-check: $mode.svg is not well-formed XML" >&2
    fail=1
    continue
  fi
  expect "$tmp/$mode.svg" "svg root in the SVG namespace, with a viewBox" \
    "/*[local-name()='svg' and namespace-uri()='http://www.w3.org/2000/svg'][@viewBox]" -eq 1
  expect "$tmp/$mode.svg" "text elements" "//*[local-name()='text']" -ge 3
done

snap=$tmp/snapshot.svg
expect "$snap" "shard rectangles" "//*[local-name()='rect'][@class='shard']" -eq 4
expect "$snap" "player circles" \
  "//*[local-name()='g'][@class='players']/*[local-name()='circle']" -ge 1
expect "$snap" "NPC squares" \
  "//*[local-name()='g'][@class='npcs']/*[local-name()='rect']" -ge 1
expect "$snap" "the view circle" "//*[local-name()='circle'][@class='view']" -eq 1
expect "$snap" "ghost rings" \
  "//*[local-name()='g'][@class='ghosts']/*[local-name()='circle']" -ge 1

chart=$tmp/chart.svg
expect "$chart" "phase bands" "//*[local-name()='path'][@class='phase']" -eq 3
expect "$chart" "the tick line" "//*[local-name()='path'][@class='tick']" -eq 1

"$svg" snapshot "$tmp/one.svg" "${crowd[@]}" --threads 1 || fail=1
if ! diff <(grep -v -e thread -e worker "$snap") \
          <(grep -v -e thread -e worker "$tmp/one.svg") >/dev/null; then
  echo "svg-check: the snapshot differs between 1 and 2 threads" >&2
  fail=1
fi

# A capped crowd: the chosen watcher holds at most the cap, and the
# candidates it passed over are drawn apart (the crowd sees more than 4).
"$svg" snapshot "$tmp/cap.svg" "${crowd[@]}" --threads 2 --cap 4 || fail=1
expect "$tmp/cap.svg" "seen, at most the cap" \
  "//*[local-name()='g'][@class='seen']/*" -le 4
expect "$tmp/cap.svg" "candidates passed over" \
  "//*[local-name()='g'][@class='passed']/*" -ge 1
expect "$snap" "nothing passed over without a cap" \
  "//*[local-name()='g'][@class='passed']/*" -eq 0

# Two sizes, two thread counts; the algorithms' figures repeat on each
# thread's line and count once; xlist did not run at 2000 (null).
algos() { # brute ninegrid tower xlist frame times, "null" for none
  printf '"algo_brute_frame_ms_median":%s,"algo_brute_tick_ms_median":1,' "$1"
  printf '"algo_ninegrid_frame_ms_median":%s,' "$2"
  printf '"algo_tower_frame_ms_median":%s,' "$3"
  printf '"algo_xlist_frame_ms_median":%s' "$4"
}
{
  echo "{\"scenario\":\"uniform\",\"entities\":1000,\"threads\":1,\"frame_ms_median\":1.5,$(algos 4 2 3 5)}"
  echo "{\"scenario\":\"uniform\",\"entities\":1000,\"threads\":2,\"frame_ms_median\":0.9,$(algos 4 2 3 5)}"
  echo "{\"scenario\":\"uniform\",\"entities\":2000,\"threads\":1,\"frame_ms_median\":3.1,$(algos 16 4 6 null)}"
  echo "{\"scenario\":\"uniform\",\"entities\":2000,\"threads\":2,\"frame_ms_median\":1.7,$(algos 16 4 6 null)}"
} >"$tmp/scaling.jsonl"
scaling=$tmp/scaling.svg
if ! "$svg" scaling "$scaling" "$tmp/scaling.jsonl"; then
  echo "svg-check: aoi-svg scaling failed" >&2
  fail=1
elif ! xmllint --noout "$scaling"; then
  echo "svg-check: scaling.svg is not well-formed XML" >&2
  fail=1
else
  expect "$scaling" "series lines" "//*[local-name()='path'][@class='series']" -eq 6
  expect "$scaling" "points" "//*[local-name()='circle'][@class='point']" -eq 11
  expect "$scaling" "the N and N^2 slopes" "//*[local-name()='path'][@class='guide']" -eq 2
fi
printf 'tick 1\n7 enter 9 10.5 -3\n' >"$tmp/not-bench"
: >"$tmp/empty"
for input in not-bench empty; do
  if "$svg" scaling "$tmp/bad.svg" "$tmp/$input" 2>/dev/null; then
    echo "svg-check: scaling took $input as aoi-bench output" >&2
    fail=1
  fi
done

if [ -n "$bench" ]; then
  for n in 300 600; do
    "$bench" --json --scenario uniform --entities "$n" --ticks 2 --threads 1,2 \
      --baseline all || fail=1
  done >"$tmp/bench.jsonl"
  if ! "$svg" scaling "$tmp/bench.svg" "$tmp/bench.jsonl"; then
    echo "svg-check: aoi-svg scaling of aoi-bench's output failed" >&2
    fail=1
  else
    # two engine series (1 and 2 threads) and the five algorithms of --baseline all
    expect "$tmp/bench.svg" "aoi-bench's series" "//*[local-name()='path'][@class='series']" -eq 7
    expect "$tmp/bench.svg" "aoi-bench's points" "//*[local-name()='circle'][@class='point']" -eq 14
  fi
fi

[ "$fail" = 0 ] && echo "svg-check: ok"
exit "$fail"
