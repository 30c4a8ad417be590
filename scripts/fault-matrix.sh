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
#
# Issue 10 §5 against kernel rxe (the rig's VMs): SIMNIC_FAULTS_RIG=1 adds the
# rig's fault groups on kernels 6.1 and 6.12 at 1%, 5% and 10%, the RC interop
# tests on soft and model devices and simnic-workload on both device types
# with twelve seeds of 128 KiB budget per run (CI's rig.interop_faults and
# rig.interop_faults612: 1% and 5%, two seeds of 32 KiB, soft devices only).
# It boots TCG VMs: it takes the rig's machine-wide lock, and its results go
# to $B/coverify/results.jsonl (testbench/coverify/report.py renders them).
# SIMNIC_FAULTS_RIG=only runs just that part.
set -u
B=$(cd "${1:-build}" && pwd)
OUT=${2:-/tmp/simnic-fault-matrix}
T=$(cd "$(dirname "$0")/../testbench/system" && pwd)/test_faults.sh
mkdir -p "$OUT"
export SIMNIC_FAULTS_SCALE=${SIMNIC_FAULTS_SCALE:-full}
pass=0 failed=()
rig_part() {
  local R; R=$(cd "$(dirname "$0")/../testbench/rig" && pwd)
  for group in interop_faults interop_faults612; do
    log=$OUT/rig.$group.log
    t0=$(date +%s)
    SIMNIC_COVERIFY_RESULTS=$B/coverify flock /tmp/simnic-heavy.lock.rig \
      python3 "$R/rig_tests.py" --rig "$R/simnic-rig" --simnic "$B/cli/simnic" \
        --verbs "$B/verbs_provider/libsimnic-verbs.so" \
        --wire-check "$R/../system/wire_check.py" --workload "$B/testbench/workload/simnic-workload" \
        --fault-rates 1%,5%,10% --fault-types soft,model --fault-scale full --budget 3600 \
        "$group" >"$log" 2>&1
    rc=$?
    printf '%-6s %-17s %s %4ss  %s\n' rig "$group" "$([ $rc -eq 0 ] && echo pass || echo FAIL)" \
      $(( $(date +%s) - t0 )) "$(grep -E '^all rules:' "$log" | head -1)"
    if [ $rc -eq 0 ]; then pass=$((pass + 1)); else failed+=("rig.$group"); fi
  done
}
if [ "${SIMNIC_FAULTS_RIG:-}" = only ]; then
  rig_part
  echo "fault matrix: $pass passed, ${#failed[@]} failed ${failed[*]:-}"
  [ ${#failed[@]} -eq 0 ]
  exit
fi
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
[ -n "${SIMNIC_FAULTS_RIG:-}" ] && rig_part
echo "fault matrix: $pass passed, ${#failed[@]} failed ${failed[*]:-}"
[ ${#failed[@]} -eq 0 ]
