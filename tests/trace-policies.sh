#!/usr/bin/env bash
# trace-policies.sh: the v2 lines (`appeal`, `cap`, `move-every`) get the
# codes of docs/trace-format.md in its order (syntax, then noent, then invalid),
# a rejected line changes nothing, and the accepted forms do what the spec
# says.
#
# usage: trace-policies.sh PATH/TO/aoi-replay (or model-replay)
#
# Two traces, each replayed with --threads 1 --shards 1 and --threads 2
# --shards 3, stdout, stderr and the exit status compared byte for byte:
#
# - rejected: move-every lines with P = 0, a negative, NaN or infinite D, a
#   P that is not digits (1.5, +2, 0x2, 2e0) or out of 32 bits, fields
#   missing or extra, one after the first add (all `syntax`); appeals NaN,
#   infinite, negative (-1e-45 too), above max-radius by a float step
#   (`invalid`), malformed (`syntax`), on an id that is not live (`noent`,
#   even when the value is bad too); caps that are not 32-bit decimal
#   digits (`syntax`), on an id that is not live (`noent`). No policy line
#   applies, so the events are v1's: any of these lines, applied with a
#   lax reading (a band of period 2, an appeal of 50 or more, a cap of 1,
#   a policy kept across a noent and a later add), would change them.
# - accepted: a tick of the empty world before the move-every lines (the
#   rate counts it), a D not above the last one as stored (10 then
#   9.999999999, which rounds to 10), eight bands then a ninth (`syntax`),
#   appeals in every float form (5e1, .15E2, -0, 1e-50, max-radius
#   exactly), caps with leading zeros and 2^32 - 1, a cap of 1 on three
#   members, a cap of 2 where a newcomer is farther, moves told at the
#   band's rate from the position last told, a respawn that resets an
#   appeal and a cap.
set -u

replay=${1:?usage: trace-policies.sh PATH/TO/aoi-replay}
# $tmp, $pass, $fail and check NAME WANT_RC (replay-check.sh)
# shellcheck source=replay-check.sh
. "$(dirname "$0")/replay-check.sh"

# --- rejected -------------------------------------------------------------

cat >"$tmp/rejected.trace" <<'TRACE'
max-radius 100
# each, if applied as a band of period 2 (or any period but 1), would hold
# back the moves of ticks 2 and 3
move-every 0 0
move-every -1 2
move-every -0.5 2
move-every nan 2
move-every inf 2
move-every 1e39 2
move-every 0 1.5
move-every 0 +2
move-every 0 0x2
move-every 0 2e0
move-every 0 4294967298
move-every 0 -4294967294
move-every 0x0 2
move-every 0
move-every 0 2 2
move-every
# 1 and 5 (radius 10) see 3 (d 5) and 4 (d 6), not 2 (d 50)
add 1 0 0 10 W
add 2 50 0 0 M
add 3 0 5 0 M
add 4 6 0 0 M
add 5 0 0 10 W
# after the first add
move-every 0 2
tick
# each, if applied as an appeal of 50 or more, would show 2 to 1 and 5
appeal 2 nan
appeal 2 -nan
appeal 2 inf
appeal 2 -1
appeal 2 -1e-45
appeal 2 100.00001
appeal 2 1e39
appeal 2 0x40
appeal 2 5e1x
appeal 2 50,0
appeal 2
appeal 2 50 50
appeal +2 50
appeal 2.0 50
appeal 0x2 50
# noent, even with a bad appeal; the new 9 has no appeal: unseen
appeal 9 50
appeal 9 nan
add 9 50 0 0 M
# each, if applied as a cap of 1, would hide 4 from 5
cap 5 1.5
cap 5 0x1
cap 5 1e0
cap 5 +1
cap 5 -1
cap 5 4294967297
cap 5 18446744073709551617
cap 5 1 1
cap 5
cap +5 1
# noent; the new 99 has no cap: it sees both
cap 99 1
add 99 0 0 10 W
move 3 0 5.5
move 4 6.5 0
tick
move 3 0 6
move 4 7 0
tick
TRACE
cat >"$tmp/rejected.expected" <<'TRACE'
tick 1
1 enter 3 0 5
1 enter 4 6 0
5 enter 3 0 5
5 enter 4 6 0
tick 2
1 move 3 0 5.5
1 move 4 6.5 0
5 move 3 0 5.5
5 move 4 6.5 0
99 enter 3 0 5.5
99 enter 4 6.5 0
tick 3
1 move 3 0 6
1 move 4 7 0
5 move 3 0 6
5 move 4 7 0
99 move 3 0 6
99 move 4 7 0
TRACE
cat >"$tmp/rejected.errors" <<'TRACE'
error 4 syntax
error 5 syntax
error 6 syntax
error 7 syntax
error 8 syntax
error 9 syntax
error 10 syntax
error 11 syntax
error 12 syntax
error 13 syntax
error 14 syntax
error 15 syntax
error 16 syntax
error 17 syntax
error 18 syntax
error 19 syntax
error 27 syntax
error 30 invalid
error 31 invalid
error 32 invalid
error 33 invalid
error 34 invalid
error 35 invalid
error 36 invalid
error 37 syntax
error 38 syntax
error 39 syntax
error 40 syntax
error 41 syntax
error 42 syntax
error 43 syntax
error 44 syntax
error 46 noent
error 47 noent
error 50 syntax
error 51 syntax
error 52 syntax
error 53 syntax
error 54 syntax
error 55 syntax
error 56 syntax
error 57 syntax
error 58 syntax
error 59 syntax
error 61 noent
TRACE
check rejected 1

# --- accepted -------------------------------------------------------------

cat >"$tmp/accepted.trace" <<'TRACE'
max-radius 100
hysteresis 1
# an empty world's tick: the next tick is 2, for the rates too
tick
move-every 10 2
# not above 10; 9.999999999 rounds to the float 10
move-every 10 3
move-every 9.999999999 3
move-every 2e1 4294967295
move-every 21 1
move-every 22 1
move-every 23 1
move-every 24 1
move-every 25 1
move-every 26 3
# a ninth band
move-every 27 1
add 1 0 0 5 W
add 2 50 0 0 M
add 3 0 15 0 M
add 4 3 0 0 M
add 5 -3 0 100 W
# 1 (radius 5) sees 2 at 50 and 3 at 15 through their appeals
appeal 2 5e1
appeal 3 .15E2
# 5 sees all three, takes the two nearest: 4 (d 6) and 3 (d 15.3)
cap 5 02
tick
# tick 3: 4 (d <= 10) every tick; 3 (10 < d <= 20, P 2): (1 + 3) mod 2 = 0
# for 1, (5 + 3) mod 2 = 0 for 5; 2 (d > 26, P 3): (1 + 3) mod 3 = 1, not
# told; 5 keeps 3 and 4 (keys d - 1) over 2 (d 52)
move 4 3.5 0
move 3 0 15.5
move 2 49 0
tick
# tick 4: (1 + 4) mod 3 = 2: still not told; tick 5: told where it is
tick
tick
# 1's three members compete for one place: 4, the nearest, stays
cap 1 01
tick
# no cap in effect: 2 (within its appeal 50) and 3 (at 15, within 15) enter
move 3 0 15
cap 1 4294967295
tick
# -0 is an appeal of 0: 2 leaves 1 (49 > 5 + 1); 3 keeps 1 with appeal 100
appeal 2 -0
appeal 3 100
cap 1 0
tick
# 1e-50 rounds to 0: 3 leaves 1; 2 respawns without its appeal (unseen);
# 5 respawns twice, its cap of 1 on the middle one: the last sees all
appeal 3 1e-50
appeal 2 100
remove 2
add 2 49 0 0 M
remove 5
add 5 -3 0 100 W
cap 5 1
remove 5
add 5 -3 0 100 W
tick
TRACE
cat >"$tmp/accepted.expected" <<'TRACE'
tick 1
tick 2
1 enter 2 50 0
1 enter 3 0 15
1 enter 4 3 0
5 enter 3 0 15
5 enter 4 3 0
tick 3
1 move 3 0 15.5
1 move 4 3.5 0
5 move 3 0 15.5
5 move 4 3.5 0
tick 4
tick 5
1 move 2 49 0
tick 6
1 leave 2
1 leave 3
tick 7
1 enter 2 49 0
1 enter 3 0 15
5 move 3 0 15
tick 8
1 leave 2
tick 9
1 leave 3
5 enter 2 49 0
5 enter 3 0 15
5 enter 4 3.5 0
TRACE
cat >"$tmp/accepted.errors" <<'TRACE'
error 7 syntax
error 8 syntax
error 17 syntax
TRACE
check accepted 1

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
