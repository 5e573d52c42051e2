#!/usr/bin/env bash
# Checks the kernel cache across processes and the fallbacks (see codegen_cache.cpp).
# Usage: codegen_cache.sh <codegen_cache binary> <scratch dir>
set -euo pipefail
bin=$1
dir=$2
rm -rf "$dir" && mkdir -p "$dir"
export TESSEL_CACHE_DIR=$dir/cache
first=$("$bin")
second=$("$bin")
off=$(TESSEL_DISABLE_CODEGEN=1 "$bin")
broken=$(TESSEL_CXX=false "$bin" 2>"$dir/broken.err")
# A compiler that runs but rejects the source: the warning carries its message, results
# come from the unfused kernels.
cat >"$dir/failing-cxx" <<'SH'
#!/bin/sh
if [ "$1" = "--version" ]; then echo "failing-cxx 1.0"; exit 0; fi
echo "failing-cxx: internal error: refusing to compile" >&2
exit 3
SH
chmod +x "$dir/failing-cxx"
failing=$(TESSEL_CACHE_DIR=$dir/cache2 TESSEL_CXX=$dir/failing-cxx "$bin" 2>"$dir/failing.err")
echo "cold:     $first"
echo "warm:     $second"
echo "disabled: $off"
echo "no compiler: $broken"
echo "failing compiler: $failing"
checksum() { sed 's/.*checksum //' <<<"$1"; }
fail() { echo "FAIL: $*"; exit 1; }
[[ $first == "codegen on compiles 1 disk_loads 0"* ]] || fail "the first process should compile once"
[[ $second == "codegen on compiles 0 disk_loads 1"* ]] || fail "the second process should load the cached kernels"
[[ $off == "codegen off compiles 0"* ]] || fail "TESSEL_DISABLE_CODEGEN=1 should turn generation off"
[[ $broken == "codegen off compiles 0"* ]] || fail "a compiler that does not run should turn generation off"
grep -q "does not run" "$dir/broken.err" || fail "a missing compiler should be reported"
[[ $failing == "codegen on compiles 1 disk_loads 0"* ]] || fail "a failing compiler should be tried once"
grep -q "refusing to compile" "$dir/failing.err" || fail "the compiler's message should reach the warning"
grep -q "runs unfused" "$dir/failing.err" || fail "the warning should say the program runs unfused"
! ls "$dir/cache2"/*.so 2>/dev/null || fail "a failed compilation left a shared object"
ls "$TESSEL_CACHE_DIR"/*.so >/dev/null || fail "no shared object in the cache"
! ls "$TESSEL_CACHE_DIR"/*.tmp.* 2>/dev/null || fail "temporary files left in the cache"
# Float sums of the same values: fused and unfused agree to rounding.
python3 - "$(checksum "$first")" "$(checksum "$second")" "$(checksum "$off")" "$(checksum "$broken")" "$(checksum "$failing")" <<'PY'
import sys
v = [float(x) for x in sys.argv[1:]]
assert max(v) - min(v) <= 1e-6 * max(1.0, abs(v[0])), v
PY
echo "codegen cache: ok"
