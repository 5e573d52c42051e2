#!/usr/bin/env bash
# The demo's checkpoints: N steps with --checkpoint-every, then --restart up to N+M steps,
# gives the same height field (.npy) bit for bit as N+M steps in one go.
# Usage: shallow_water_restart.sh WORK_DIR LAUNCHER... -- SHALLOW_WATER [ARGS...]
# (LAUNCHER may be empty: `shallow_water_restart.sh dir -- ./shallow_water --shard 2`.)
set -euo pipefail
work=$1; shift
launcher=()
while [ "$1" != "--" ]; do launcher+=("$1"); shift; done
shift
rm -rf "$work" && mkdir -p "$work"
common=(--nx 24 --ny 12 --no-progress "${@:2}")
"${launcher[@]}" "$1" "${common[@]}" --steps 30 --checkpoint-every 10 --checkpoint-dir "$work/ckpt" --out "$work/first.npy"
"${launcher[@]}" "$1" "${common[@]}" --steps 50 --restart --checkpoint-dir "$work/ckpt" --out "$work/restarted.npy" | grep "restart: from step 30"
"${launcher[@]}" "$1" "${common[@]}" --steps 50 --out "$work/straight.npy"
cmp "$work/restarted.npy" "$work/straight.npy"
echo "shallow_water_restart: ok"
