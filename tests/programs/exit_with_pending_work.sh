#!/bin/sh
# Runs exit_with_pending_work RUNS times (default 50) with communication pending and RUNS
# times without (then no MPI exit handler drains the streams first): every run must exit 0
# after running every pending callback. Usage: exit_with_pending_work.sh <program> [RUNS]
prog="$1"
runs="${2:-50}"
failed=0
for mode in comm no-comm; do
  i=1
  while [ "$i" -le "$runs" ]; do
    out=$("$prog" "$mode" 2>&1)
    rc=$?
    if [ "$rc" -ne 0 ]; then
      echo "$mode run $i: exit status $rc"
      echo "$out" | tail -5
      failed=$((failed + 1))
    elif ! echo "$out" | grep -Eq 'at exit: ([0-9]+) calls, \1 taps, 1 colocated calls \(expected \1, \1, 1\)'; then
      echo "$mode run $i: pending callbacks did not all run:"
      echo "$out" | tail -5
      failed=$((failed + 1))
    fi
    i=$((i + 1))
  done
done
if [ "$failed" -ne 0 ]; then
  echo "exit with pending work: $failed of $((2 * runs)) runs failed"
  exit 1
fi
echo "exit with pending work: all $((2 * runs)) runs exited 0"
