#!/bin/sh
# test.sh BUILD_DIR: vets, tests (race detector on) and briefly benchmarks
# the Go binding against BUILD_DIR's libaoi.a and aoi-bench. Everything
# Go writes (build cache, module cache) stays under BUILD_DIR/go, so it
# runs from a fresh clone, as any user, without the network.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
if [ ! -f "$build/libaoi.a" ]; then
  echo "test.sh: no $build/libaoi.a: build the library first" >&2
  exit 1
fi
export GOCACHE="$build/go/cache" GOPATH="$build/go/path"
export GOFLAGS=-mod=mod GO111MODULE=on GOTOOLCHAIN=local GOPROXY=off
export CGO_ENABLED=1 CGO_LDFLAGS="-L$build"
if [ -x "$build/aoi-bench" ]; then
  export AOI_BENCH="$build/aoi-bench"
else
  echo "test.sh: no $build/aoi-bench: the crowd checksum test is skipped" >&2
fi
cd "$here"
echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -count=1 ./...
echo "== go test -bench (short)"
go test -run '^$' -bench . -benchtime 50x -count=1 .
