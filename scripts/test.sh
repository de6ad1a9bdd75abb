#!/bin/sh
# Builds and runs every test, in six builds:
#   test    RelWithDebInfo: every test (unit, differential, shared traces,
#           layouts, misuse, oom, a 60 s soak)
#   asan    ASan+UBSan (LeakSanitizer on): every test, a 20 s soak
#   tsan    ThreadSanitizer with the C11-atomics ring: the threaded tests
#   (the sanitizer and fuzz builds also turn AOI__ASSERT and the O(n)
#   AOI__ASSERT_EXPENSIVE on, and walk the world's invariants after every
#   tick: AOI_DEBUG_EXPENSIVE, AOI_CHECK_INVARIANTS, CMakeLists)
#   stress  ThreadSanitizer plus random yields and delays injected at ring
#           push/pop, handoff and merge: the stress group
#   mpi     -DAOI_MPI=ON, when mpicc and mpirun are there: one world over
#           1 to 4 MPI ranks against the model on every shared and
#           generated trace, strips that move, and a killed rank (the mpi
#           group)
#   fuzz    clang, libFuzzer + ASan + UBSan: each fuzz target for a short
#           fixed time, and its regression inputs
# usage: scripts/test.sh [BUILD_ROOT]   (default: build-tests)
set -eu
root=${1:-build-tests}
jobs=$(nproc 2>/dev/null || echo 2)
cd "$(dirname "$0")/.."

run() { # NAME CTEST_ARGS CMAKE_ARGS...
  dir="$root/$1" args=$2
  shift 2
  echo "=== $dir: $*"
  cmake -S . -B "$dir" -DAOI_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  # shellcheck disable=SC2086
  (cd "$dir" && ctest --output-on-failure -j "$jobs" $args)
}

run test "" -DCMAKE_BUILD_TYPE=RelWithDebInfo
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  run asan "" -DCMAKE_BUILD_TYPE=Debug -DAOI_SANITIZE=address,undefined \
  -DAOI_SOAK_SECONDS=20
TSAN_OPTIONS=halt_on_error=1 \
  run tsan "-L threaded" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DAOI_SANITIZE=thread
TSAN_OPTIONS=halt_on_error=1 \
  run stress "-L stress" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DAOI_SANITIZE=thread -DAOI_STRESS=ON
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
  run mpi "-L mpi" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAOI_MPI=ON
else
  echo "=== mpi: skipped, no Open MPI (scripts/deps.sh test installs it)"
fi
if command -v clang >/dev/null 2>&1; then
  run fuzz "-L fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DAOI_FUZZ=ON
else
  echo "=== fuzz: skipped, no clang (scripts/deps.sh test installs it)"
fi
echo "all test builds passed"
