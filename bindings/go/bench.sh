#!/bin/sh
# bench.sh [BUILD_DIR]: the 20k uniform crowd, in C (aoi-bench) and
# through the Go binding (cmd/aoi-go-bench replaying aoi-bench's
# operations), at two threads. Prints
#   go frame X ms, C frame Y ms, ratio Z, checksum match yes/no
# A frame is the moves, the tick and the delivery of every event. The Go
# frame also hashes every event inside the delivery callback; aoi-bench
# copies them out and hashes after its frame (its checksum_ms_median).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
export GOCACHE="$build/go/cache" GOPATH="$build/go/path"
export GOFLAGS=-mod=mod GO111MODULE=on GOTOOLCHAIN=local GOPROXY=off
export CGO_ENABLED=1 CGO_LDFLAGS="-L$build"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/aoi-bench" --entities 20000 --ticks 50 --threads 2 --no-baseline \
  --json --dump-ops "$tmp/ops" >"$tmp/c.json"
(cd "$here" && go build -o "$tmp/aoi-go-bench" ./cmd/aoi-go-bench)
"$tmp/aoi-go-bench" -ops "$tmp/ops" -threads 2 >"$tmp/go.txt"
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"]*\).*/\1/p" "$tmp/c.json"; }
c_frame=$(field frame_ms_median)
c_sum=$(field checksum)
go_frame=$(awk '$1 == "frame_ms_median" {print $2}' "$tmp/go.txt")
go_sum=$(awk '$1 == "checksum" {print $2}' "$tmp/go.txt")
match=no
[ "$c_sum" = "$go_sum" ] && match=yes
awk -v g="$go_frame" -v c="$c_frame" -v m="$match" 'BEGIN {
  printf "go frame %.3f ms, C frame %.3f ms, ratio %.2f, checksum match %s\n",
    g, c, g / c, m }'
[ "$match" = yes ]
