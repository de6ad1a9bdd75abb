# replay-check.sh: sourced by trace-numbers.sh, trace-policies.sh and
# replay-layouts.sh, after they set $replay. Makes $tmp (removed on exit)
# and the counts $pass and $fail.
#
# expect_replay LABEL WANT_RC WANT_OUT WANT_ERR ARGUMENTS...: runs $replay
# with ARGUMENTS and compares its stdout, stderr and exit status with the
# files WANT_OUT and WANT_ERR and WANT_RC; counts a pass or a fail, and
# shows the first differences of a fail.
#
# check NAME WANT_RC: expect_replay of $tmp/NAME.trace at --threads 1
# --shards 1 and at --threads 2 --shards 3, against $tmp/NAME.expected and
# $tmp/NAME.errors.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

expect_replay() {
  local label=$1 want_rc=$2 want_out=$3 want_err=$4 rc
  shift 4
  "$replay" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" = "$want_rc" ] && cmp -s "$tmp/out" "$want_out" &&
    cmp -s "$tmp/err" "$want_err"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $label: exit $rc (want $want_rc)"
    diff "$want_out" "$tmp/out" | head -10
    diff "$want_err" "$tmp/err" | head -10
  fi
}

check() {
  local name=$1 want_rc=$2 layout
  for layout in "--threads 1 --shards 1" "--threads 2 --shards 3"; do
    # shellcheck disable=SC2086
    expect_replay "$name ($layout)" "$want_rc" "$tmp/$name.expected" \
      "$tmp/$name.errors" $layout "$tmp/$name.trace"
  done
}
