#!/usr/bin/env bash
# svg-check.sh: aoi-svg writes well-formed standalone SVG with what it draws.
#
# usage: svg-check.sh PATH/TO/aoi-svg
#
# Writes one snapshot and one chart of a small crowd into a temporary
# directory, checks each with `xmllint --noout` (Debian: libxml2-utils;
# without it this fails, it does not skip), then checks with XPath that the
# root is an <svg> in the SVG namespace with a viewBox and that the expected
# elements are there: one rectangle per shard, entity circles, the view
# circle; the three phase bands and the tick line. Then a snapshot drawn
# with another thread count is the same, but for the lines naming threads,
# and a capped one draws at most the cap in view and the rest passed over.
set -u

svg=${1:?usage: svg-check.sh PATH/TO/aoi-svg}
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

[ "$fail" = 0 ] && echo "svg-check: ok"
exit "$fail"
