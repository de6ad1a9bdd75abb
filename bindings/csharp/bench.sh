#!/bin/sh
# bench.sh BUILD_DIR: the C# binding against C on aoi-bench's uniform
# crowd (20000 entities, 50 ticks, 2 threads). aoi-bench runs the crowd,
# prints its median frame and checksum and dumps its operations; Bench.exe
# replays them through the binding. Prints
#   csharp frame X ms, C frame Y ms, ratio Z, checksum match yes/no
# Both frames are operations + tick + delivery; the C# one also hashes
# every event (in the delivery handler), which aoi-bench times apart
# (checksum_ms_median, printed below the line).
set -eu

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
out="$build/bindings/csharp"
mkdir -p "$out"
entities=20000 ticks=50 threads=2

flags="-unsafe -optimize -langversion:7.2 -nologo"
mcs $flags -target:library -out:"$out/Aoi.dll" "$here/Aoi.cs"
cp "$here/Aoi.dll.config" "$out/Aoi.dll.config"
mcs $flags -r:"$out/Aoi.dll" -out:"$out/Bench.exe" \
  "$here/Bench.cs" "$here/Replay.cs"

ops="$out/crowd-20k.ops"
json=$("$build/aoi-bench" --entities $entities --ticks $ticks \
  --threads $threads --no-baseline --json --dump-ops "$ops")
field() {
  printf '%s\n' "$json" | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"]*\)\"\{0,1\},.*/\1/p"
}
c_frame=$(field frame_ms_median)
c_hash=$(field checksum_ms_median)
c_parts="submit $(field submit_ms_median) tick $(field tick_ms_median) deliver $(field deliver_ms_median)"
c_sum=$(field checksum)

cs=$(cd "$out" && LD_LIBRARY_PATH="$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  mono Bench.exe "$ops" $ticks $threads)
cs_frame=$(printf '%s\n' "$cs" | sed -n 's/.*frame_ms_median \([^ ]*\).*/\1/p')
cs_sum=$(printf '%s\n' "$cs" | sed -n 's/.*checksum \([^ ]*\).*/\1/p')

match=no
[ "$cs_sum" = "$c_sum" ] && match=yes
ratio=$(awk -v a="$cs_frame" -v b="$c_frame" 'BEGIN { printf "%.2f", a / b }')
printf 'csharp frame %s ms, C frame %.3f ms, ratio %s, checksum match %s\n' \
  "$cs_frame" "$c_frame" "$ratio" "$match"
printf "  C: %s, checksum_ms_median %s (not in its frame)\n  C#: %s\n" "$c_parts" "$c_hash" "$cs"
[ "$match" = yes ]
