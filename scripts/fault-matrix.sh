#!/usr/bin/env bash
# Issue 12, section 1 by hand: every fault (drop, dup, reorder, delay,
# corrupt) at 1%, 5% and 10% between two devices on a `simnic wire`, soft-soft
# and soft-model, with ten times CI's traffic (SIMNIC_FAULTS_SCALE=full: 1000
# RC rounds each way, 2000 UC/UD messages each way, 2000 perftest iterations
# of 8 KiB, 200 rping -V pings), then the timers on both device types. One line
# per case; the logs stay in $OUT.
#   scripts/fault-matrix.sh [BUILD_DIR] [OUT]     (default build, /tmp/simnic-fault-matrix)
# SIMNIC_FAULTS_SCALE=ci: CI's traffic instead. Run inside a private network
# namespace when others share the machine: unshare --net --fork sh -c 'ip link set lo up; scripts/fault-matrix.sh'.
set -u
B=$(cd "${1:-build}" && pwd)
OUT=${2:-/tmp/simnic-fault-matrix}
T=$(cd "$(dirname "$0")/../testbench/system" && pwd)/test_faults.sh
mkdir -p "$OUT"
export SIMNIC_FAULTS_SCALE=${SIMNIC_FAULTS_SCALE:-full}
pass=0 failed=()
for type in soft model; do
  for kind in drop dup reorder delay corrupt timers; do
    for pct in 1 5 10; do
      c=${kind}_$pct
      [ "$kind" = timers ] && { [ "$pct" = 1 ] || continue; c=timers; }
      log=$OUT/$type.$c.log
      t0=$(date +%s)
      SIMNIC_DEVICE_TYPE=$type SIMNIC_TIMER_SLACK_MS=$([ "$type" = model ] && echo 200 || echo 50) \
        "$T" "$c" "$B/cli/simnic" "$B/verbs_provider/libsimnic-verbs.so" "$B/testbench/system/simnic_faults_app" >"$log" 2>&1
      rc=$?
      printf '%-6s %-11s %s %4ss  %s\n' "$type" "$c" "$([ $rc -eq 0 ] && echo pass || echo FAIL)" $(( $(date +%s) - t0 )) \
        "$(grep -E '^wire:' "$log" | head -1)"
      if [ $rc -eq 0 ]; then pass=$((pass + 1)); else failed+=("$type.$c"); fi
    done
  done
done
echo "fault matrix: $pass passed, ${#failed[@]} failed ${failed[*]:-}"
[ ${#failed[@]} -eq 0 ]
