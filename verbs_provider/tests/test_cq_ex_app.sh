#!/usr/bin/env bash
# Runs simnic_cq_ex_app (an ordinary libibverbs program using ibv_create_cq_ex,
# the start_poll / next_poll / end_poll iterator and ibv_query_device_ex)
# under `simnic exec` against a soft device on lo, in a runtime directory of
# its own; then checks that the device holds nothing of the program's.
#   test_cq_ex_app.sh SIMNIC LIBSIMNIC_VERBS SIMNIC_CQ_EX_APP [CATCH ARGS...]
set -u
SIMNIC=$1 LIB=$2 EXE=$3
shift 3
DEV=cqex_lo
export SIMNIC_RUNTIME_DIR=$(mktemp -d /tmp/simnic-cqex.XXXXXX)
export SIMNIC_VERBS_LIB=$LIB SIMNIC_TEST_DEVICE=$DEV
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cleanup() {
  "$SIMNIC" link delete "$DEV" >/dev/null 2>&1
  if [ -f "$SIMNIC_RUNTIME_DIR/simnicd.state" ]; then
    pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$SIMNIC_RUNTIME_DIR/simnicd.state")
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
  fi
  rm -rf "$SIMNIC_RUNTIME_DIR"
}
trap cleanup EXIT

"$SIMNIC" link add "$DEV" type soft netdev lo || { echo "FAIL: simnic link add"; exit 1; }
timeout 120 "$SIMNIC" exec -- "$EXE" "$@" || fail "simnic_cq_ex_app exited $?"
counts=$("$SIMNIC" resource show -j 2>&1)
for kind in qps cqs mrs pds; do
  echo "$counts" | grep -Eq "\"$kind\":0([,}])" || fail "$kind left behind after exit: $counts"
done
"$SIMNIC" link delete "$DEV" || fail "simnic link delete"
if [ "$failures" -ne 0 ]; then echo "cq_ex_app: $failures checks failed"; exit 1; fi
echo "cq_ex_app: passed"
