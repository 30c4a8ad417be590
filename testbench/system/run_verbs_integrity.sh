#!/usr/bin/env bash
# Runs simnic_verbs_integrity (simnic's own verbs test program, an ordinary
# libibverbs application; or another such program, e.g. simnic_mw_app) under
# `simnic exec` against a private daemon and a soft device on lo, as an
# ordinary user: when run as root (CI is) it drops to `nobody` for everything
# it starts, as test_ibv_apps.sh does. Then it checks that the device holds no
# QP, CQ, MR, MW or PD once the program has exited.
#
#   run_verbs_integrity.sh SIMNIC LIBSIMNIC_VERBS PROGRAM [CATCH ARGS...]
set -u
SIMNIC=$1 LIB=$2 EXE=$3
shift 3
NAME=$(basename "$EXE")
DEV=integ_lo
. "$(dirname "$0")/lib.sh"
sys_init integ SIMNIC LIB EXE
export SIMNIC_TEST_DEVICE=$DEV

trap sys_cleanup EXIT

link_add "$DEV"

# --durations: the time each case takes, to spot a slow path.
"${AS[@]}" timeout 240 "$SIMNIC" exec -- "$EXE" --durations yes "$@"
rc=$?
[ "$rc" -eq 0 ] || fail "$NAME exited $rc"

# The program is gone: the device must hold nothing of its.
nothing_left "after exit" qps cqs mrs mws pds

sys_finish "$NAME"
