# trace-check.sh: sourced by trace-numbers.sh and trace-policies.sh, after
# they set $replay. Makes $tmp (removed on exit) and the counts $pass and
# $fail.
#
# check NAME WANT_RC: replays $tmp/NAME.trace with $replay at --threads 1
# --shards 1 and at --threads 2 --shards 3, and compares stdout, stderr and
# the exit status with $tmp/NAME.expected, $tmp/NAME.errors and WANT_RC;
# counts each layout in $pass or $fail and shows the first differences.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

check() {
  local name=$1 want_rc=$2 layout rc
  for layout in "--threads 1 --shards 1" "--threads 2 --shards 3"; do
    # shellcheck disable=SC2086
    "$replay" $layout "$tmp/$name.trace" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" = "$want_rc" ] && cmp -s "$tmp/out" "$tmp/$name.expected" &&
      cmp -s "$tmp/err" "$tmp/$name.errors"; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      echo "FAIL $name ($layout): exit $rc (want $want_rc)"
      diff "$tmp/$name.expected" "$tmp/out" | head -10
      diff "$tmp/$name.errors" "$tmp/err" | head -10
    fi
  done
}
