#!/usr/bin/env bash
# Checks that an installed tessel works for a downstream CMake project: installs the build
# tree into a scratch prefix, configures tests/consumer against it with find_package(tessel),
# builds it, runs it and checks its output.
# Usage: scripts/test-consumer.sh BUILD_DIR WORK_DIR [CMAKE [GENERATOR [CXX_COMPILER]]]
set -euo pipefail
build_dir=$(cd "${1:?usage: test-consumer.sh BUILD_DIR WORK_DIR}" && pwd)
work_dir=${2:?usage: test-consumer.sh BUILD_DIR WORK_DIR}
cmake_bin=${3:-cmake}
generator=${4:-Ninja}
cxx=${5:-}
source_dir=$(cd "$(dirname "$0")/../tests/consumer" && pwd)

rm -rf "$work_dir"
mkdir -p "$work_dir"
prefix="$work_dir/prefix"

"$cmake_bin" --install "$build_dir" --prefix "$prefix" >"$work_dir/install.log"
# The prefix must hold the public headers and the package files find_package reads.
for f in tesselConfig.cmake tesselConfigVersion.cmake tesselTargets.cmake; do
  if [ -z "$(find "$prefix" -name "$f" -print -quit)" ]; then
    echo "test-consumer: $f is missing from the installed prefix $prefix" >&2
    exit 1
  fi
done
[ -f "$prefix/include/tessel/tessel.h" ] || { echo "test-consumer: headers not installed" >&2; exit 1; }

args=(-S "$source_dir" -B "$work_dir/build" -G "$generator" -DCMAKE_BUILD_TYPE=Release
      "-DCMAKE_PREFIX_PATH=$prefix")
[ -n "$cxx" ] && args+=("-DCMAKE_CXX_COMPILER=$cxx")
"$cmake_bin" "${args[@]}" >"$work_dir/configure.log" || { cat "$work_dir/configure.log" >&2; exit 1; }
"$cmake_bin" --build "$work_dir/build" >"$work_dir/build.log" 2>&1 || { cat "$work_dir/build.log" >&2; exit 1; }

out=$("$work_dir/build/consumer")
echo "$out"
# x = [0 1 2 3] (float32); f(x) = sum(2x + 1) = 16, printed NumPy-style.
expected_re='^\[0\. 1\. 2\. 3\.\] -> 16\.0*$'
if ! grep -Eq "$expected_re" <<<"$out"; then
  echo "test-consumer: unexpected output; wanted a line matching $expected_re" >&2
  exit 1
fi
