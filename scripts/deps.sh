#!/bin/sh
# Installs what the build needs, if it is missing, from Debian's packages:
# a C compiler, CMake, pkg-config, Concurrency Kit and cmocka. With the
# argument `test`, also what the test builds need: clang and its runtime
# (libFuzzer), xmllint, the bindings' Lua 5.4, Go and Mono, and Open MPI
# (the distributed world, -DAOI_MPI=ON). Runs
# apt-get as root, or via sudo.
# usage: scripts/deps.sh [test]
set -e
need=""
command -v cc >/dev/null 2>&1 || need="$need build-essential"
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
packages="libck-dev libcmocka-dev"
# the bindings' toolchains (bindings/): Lua 5.4, Go, Mono
[ "${1:-}" = test ] && packages="$packages clang libclang-rt-dev libxml2-utils
  lua5.4 liblua5.4-dev golang-go mono-devel libopenmpi-dev openmpi-bin"
for pkg in $packages; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need="$need $pkg"
done
[ -z "$need" ] && exit 0
echo "installing:$need" >&2
if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq $need >/dev/null
