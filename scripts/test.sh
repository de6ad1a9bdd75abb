#!/bin/sh
# Builds and runs every test: a release-like build (all tests, shared traces
# at many layouts), an ASan+UBSan build of all tests, and a ThreadSanitizer
# build (with the C11-atomics ring) of the threaded tests.
# usage: scripts/test.sh [BUILD_ROOT]   (default: build-tests)
set -eu
root=${1:-build-tests}
jobs=$(nproc 2>/dev/null || echo 2)
cd "$(dirname "$0")/.."

run() { # NAME CMAKE_ARGS... ; then ctest with $CTEST_ARGS
  dir="$root/$1"; shift
  echo "=== $dir: $*"
  cmake -S . -B "$dir" -DAOI_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  (cd "$dir" && ctest --output-on-failure -j "$jobs" $CTEST_ARGS)
}

CTEST_ARGS="" run test -DCMAKE_BUILD_TYPE=RelWithDebInfo
CTEST_ARGS="" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  run asan -DCMAKE_BUILD_TYPE=Debug -DAOI_SANITIZE=address,undefined
CTEST_ARGS="-L threaded" TSAN_OPTIONS=halt_on_error=1 \
  run tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAOI_SANITIZE=thread
echo "all test builds passed"
