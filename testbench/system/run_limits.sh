#!/usr/bin/env bash
# Runs simnic_limits_app (limits_app.cpp) through run_verbs_integrity.sh's
# steps, with the private daemon's pid for its memory figures.
#   run_limits.sh SIMNIC LIBSIMNIC_VERBS LIMITS_APP [CATCH ARGS...]
# SIMNIC_LIMITS_QPS, SIMNIC_LIMITS_MRS: the [scale] case's counts;
# SIMNIC_LIMITS_TIMEOUT: seconds the program may take (default 1200).
set -u
SIMNIC=$1 LIB=$2 EXE=$3
shift 3
DEV=limits_dev
. "$(dirname "$0")/lib.sh"
sys_init limits SIMNIC LIB EXE
export SIMNIC_TEST_DEVICE=$DEV
trap sys_cleanup EXIT
link_add "$DEV"
"${AS[@]}" env SIMNIC_DAEMON_PID="$(daemon_pid)" timeout "${SIMNIC_LIMITS_TIMEOUT:-1200}" "$SIMNIC" exec -- "$EXE" "$@"
rc=$?
[ "$rc" -eq 0 ] || fail "$(basename "$EXE") exited $rc"
wait_no_qps || fail "QPs left behind"
nothing_left "after exit" qps cqs mrs pds srqs ahs mws
sim resource show -j
sys_finish "$(basename "$EXE")"
