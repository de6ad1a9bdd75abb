#!/usr/bin/env bash
# trace-numbers.sh: a replay reads numbers exactly as docs/trace-format.md's
# "Numbers" says, and rejects everything else as `syntax`.
#
# usage: trace-numbers.sh PATH/TO/aoi-replay (or model-replay)
#
# Two traces, each replayed with --threads 1 --shards 1 and --threads 2
# --shards 3, stdout, stderr and the exit status compared byte for byte:
#
# - rejected: every malformed float (hex floats, separators, a lone sign or
#   point, an exponent without digits, "nan(...)", blanks other than space
#   and tab, ...) in every float field of every command, every malformed id
#   (a sign, 0x, a point, a blank other than space and tab, out of range) in
#   every id field, every malformed mask in every mask field. Each line must
#   give `error LINE syntax` and change nothing: the fields are chosen so
#   that any of these lines, applied, would change the printed events or
#   make a later valid line fail. The same malformed numbers in the v2
#   lines (appeal's A, move-every's D; cap's K and move-every's P, read as
#   ids are, but within 32 bits) are told by their error line alone: most
#   would change no event. trace-policies.sh checks what those lines do.
# - accepted: the forms the spec allows (`.5`, `-2.5`, `3e-2`, `1E+2`, `5.`,
#   NaN, -inf, Infinity in any case, leading zeros, 0x/0X masks), rounding
#   once to float (a decimal just above a float midpoint, which strtod then
#   a cast to float would round down), and values that round to an infinity
#   (`1e39`): `invalid` for a coordinate or a radius, `syntax` for a config
#   value.
set -u

replay=${1:?usage: trace-numbers.sh PATH/TO/aoi-replay}
# $tmp, $pass, $fail and check NAME WANT_RC (replay-check.sh)
# shellcheck source=replay-check.sh
. "$(dirname "$0")/replay-check.sh"

# --- rejected -------------------------------------------------------------

# Not decimal floats. None holds a space or a tab (they split fields).
bad_floats=(
  0x10 0X10 0x1p3 0x1P-2 0x.8p1 -0x10 0x 1_000 "1,5" "1'000" 1e 1E 1e+ 1e-
  . + - -. +. .e1 e1 E5 -- --1 ++1 +-1 -+1 1.5.2 1..2 1e1.5 1e1e1 1e+-2
  1e--2 1f 1.0f 1d 1L 0b1 x1 1x inf1 infin infinit infinityy nana nann
  "nan(1)" "nan()" "-nan(0x1)" --inf +-inf -+nan "inf.0" "$(printf '\v1')"
  "$(printf '\f1')" "$(printf '1\v')" "$(printf '1\r2')" "$(printf '\r1')"
  "$(printf '\xd9\xa1')" "$(printf '\xc2\xbd')" "1$(printf '\xc2\xa0')"
)
# Not ids: decimal digits only, at most 2^64 - 1. Each, if it were read as
# a number, would be 2 (the live marker) or out of range.
bad_ids=(
  +2 -2 0x2 0X2 2.0 2. 2e0 2_0 "$(printf '\v2')" "$(printf '\f2')"
  "$(printf '\r2')" "$(printf '2\v')" "$(printf '\xd9\xa2')"
  18446744073709551616 99999999999999999999999 0x 2x
)
# Not masks: decimal, or 0x/0X and hex digits, at most 2^32 - 1. Each, if
# it were read as a number, would be 0.
bad_masks=(
  +0 -0 0x 0X 0x+0 0x-0 0.0 0e0 0b0 0x0g 00x0 0o0 0_0 4294967296
  0x100000000 0xfffffffff "$(printf '\v0')" "$(printf '0\f')"
)

line=0
: >"$tmp/rejected.trace"
: >"$tmp/rejected.errors"
# emit TEXT: writes one trace line. reject TEXT: one that must be `syntax`.
emit() {
  printf '%s\n' "$1" >>"$tmp/rejected.trace"
  line=$((line + 1))
}
reject() {
  emit "$1"
  printf 'error %d syntax\n' "$line" >>"$tmp/rejected.errors"
}

# Config lines, before the first add. max-radius and shape are seen below
# (watcher 1's radius 50 needs max-radius >= 50; marker 3 is outside a
# circle of 50 but inside a square or cells); world only has its error.
for f in "${bad_floats[@]}"; do
  reject "world $f 0 100 100"
  reject "world 0 $f 100 100"
  reject "world 0 0 $f 100"
  reject "world 0 0 100 $f"
  reject "max-radius $f"
  reject "hysteresis $f"
  reject "shape cells $f"
  reject "move-every $f 2"
done
for id in "${bad_ids[@]}"; do
  reject "move-every 1 $id"
done
reject "max-radius 1e39"
reject "max-radius -1e39"
reject "max-radius 0x1p3"
reject "hysteresis inf"
reject "hysteresis NaN"
reject "shape cells -Infinity"
reject "world 0 0 1e39 1"
reject "move-every 1e39 2"
reject "move-every -inf 2"
reject "move-every 1 4294967296"
emit "add 1 0 0 50 W"
emit "add 2 10 0 0 M"
emit "add 3 40 40 0 M"
emit "tick"
next_id=100
for f in "${bad_floats[@]}"; do
  reject "add $next_id $f 0 0 M"
  reject "add $((next_id + 1)) 0 $f 0 M"
  reject "add $((next_id + 2)) 0 0 $f WM"
  reject "move 2 $f 0"
  reject "move 2 0 $f"
  reject "radius 1 $f"
  # A syntax error wins over `invalid` (FLAGS) and `exists` (id 1).
  reject "add $((next_id + 3)) $f 0 0 X"
  reject "add 1 0 $f 0 M"
  reject "appeal 3 $f"
  reject "appeal 999 $f" # syntax wins over noent
  next_id=$((next_id + 4))
done
for id in "${bad_ids[@]}"; do
  reject "add $id 1 1 0 M"
  reject "move $id 1 1"
  reject "radius $id 1"
  reject "layers $id 0 0"
  reject "remove $id"
  reject "appeal $id 1"
  reject "cap $id 1"
  reject "cap 1 $id"
done
reject "cap 1 4294967296"
reject "cap 1 99999999999"

for m in "${bad_masks[@]}"; do
  reject "add $next_id 1 1 0 M $m 0xffffffff"
  reject "add $((next_id + 1)) 1 1 0 M 0xffffffff $m"
  reject "layers 2 $m 0xffffffff"
  reject "layers 1 0xffffffff $m"
  next_id=$((next_id + 2))
done
emit "tick"
# Still the world of the first tick: no hysteresis, a circle of 50.
emit "move 2 55 0"
emit "tick"
{
  echo "tick 1"
  echo "1 enter 2 10 0"
  echo "tick 2"
  echo "tick 3"
  echo "1 leave 2"
} >"$tmp/rejected.expected"
check rejected 1

# --- accepted -------------------------------------------------------------

cat >"$tmp/accepted.trace" <<'EOF'
world -1e3 -.5E3 +1E3 500.
max-radius 3.40282356e38
max-radius 3.40282357e38
shape cells 2.5e1
hysteresis 0e0
shape circle
max-radius 1E+3
max-radius inf
add 1 0 0 1E+2 W
add 2 .5 -2.5 0 M
add 3 3e-2 +4 0 M
add 4 -0 1.00000005960464477539062500000001 0 M
add 5 00012.5000e-1 0.1 00 M
add 6 +.5E+0 -7. 0 M
add 7 1e-40 -1E-50 0 M 0X1 4294967295
add 0018446744073709551615 -99.99999999 0 0 M 0x0000000000000001 000
add 20 NaN 0 0 M
add 21 0 -inf 0 M
add 22 Infinity 0 0 M
add 23 1e39 0 0 M
add 24 0 -1e39 0 M
add 25 0 0 INF W
add 26 0 0 -nan W
add 27 0 0 -0.5 W
add 28 0 0 1000.0001 W
add 29 0 0 1000.00001 W
add 30 iNfInItY 0 0 M
tick
move 2 -INF 0
move 2 0 nAn
move 2 1e39 0
move 2 0 -3.5e38
move 2 .75 -2.5e0
radius 1 1e39
radius 1 +NAN
radius 1 1E-1
layers 18446744073709551615 1 0x0
tick
radius 29 5.
radius 1 1e2
tick
EOF
cat >"$tmp/accepted.expected" <<'EOF'
tick 1
1 enter 2 0.5 -2.5
1 enter 3 0.0299999993 4
1 enter 4 -0 1.00000012
1 enter 5 1.25 0.100000001
1 enter 6 0.5 -7
1 enter 7 9.9999461e-41 -0
1 enter 18446744073709551615 -100 0
29 enter 2 0.5 -2.5
29 enter 3 0.0299999993 4
29 enter 4 -0 1.00000012
29 enter 5 1.25 0.100000001
29 enter 6 0.5 -7
29 enter 7 9.9999461e-41 -0
29 enter 18446744073709551615 -100 0
tick 2
1 leave 2
1 leave 3
1 leave 4
1 leave 5
1 leave 6
1 leave 18446744073709551615
29 move 2 0.75 -2.5
tick 3
1 enter 2 0.75 -2.5
1 enter 3 0.0299999993 4
1 enter 4 -0 1.00000012
1 enter 5 1.25 0.100000001
1 enter 6 0.5 -7
1 enter 18446744073709551615 -100 0
29 leave 6
29 leave 18446744073709551615
EOF
cat >"$tmp/accepted.errors" <<'EOF'
error 3 syntax
error 8 syntax
error 17 invalid
error 18 invalid
error 19 invalid
error 20 invalid
error 21 invalid
error 22 invalid
error 23 invalid
error 24 invalid
error 25 invalid
error 27 invalid
error 29 invalid
error 30 invalid
error 31 invalid
error 32 invalid
error 34 invalid
error 35 invalid
EOF
check accepted 1

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
