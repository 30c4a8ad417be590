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
work=$(mktemp -d /tmp/simnic-integ.XXXXXX)
chmod 755 "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

AS=()
if [ "$(id -u)" -eq 0 ]; then
  cp "$SIMNIC" "$work/simnic"; cp "$LIB" "$work/libsimnic-verbs.so"; cp "$EXE" "$work/$NAME"
  chmod 755 "$work/simnic" "$work/libsimnic-verbs.so" "$work/$NAME"
  SIMNIC=$work/simnic LIB=$work/libsimnic-verbs.so EXE=$work/$NAME
  mkdir -m 700 "$work/rt"; chown nobody:nogroup "$work/rt"
  AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
else
  mkdir -m 700 "$work/rt"
fi
export SIMNIC_RUNTIME_DIR=$work/rt SIMNIC_VERBS_LIB=$LIB SIMNIC_TEST_DEVICE=$DEV
sim() { "${AS[@]}" "$SIMNIC" "$@"; }

cleanup() {
  sim link delete "$DEV" >/dev/null 2>&1
  if [ -f "$SIMNIC_RUNTIME_DIR/simnicd.state" ]; then
    pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$SIMNIC_RUNTIME_DIR/simnicd.state")
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

read -r -a link_opts <<<"${SIMNIC_LINK_OPTS:-}"
sim link add "$DEV" type "${SIMNIC_DEVICE_TYPE:-soft}" netdev lo "${link_opts[@]}" || { echo "FAIL: simnic link add"; exit 1; }

# --durations: the time each case takes, to spot a slow path.
"${AS[@]}" timeout 240 "$SIMNIC" exec -- "$EXE" --durations yes "$@"
rc=$?
[ "$rc" -eq 0 ] || fail "$NAME exited $rc"

# The program is gone: the device must hold nothing of its.
counts=$(sim resource show -j 2>&1)
for kind in qps cqs mrs mws pds; do
  echo "$counts" | grep -Eq "\"$kind\":0([,}])" || fail "$kind left behind after exit: $counts"
done

if [ "$failures" -ne 0 ]; then
  echo "$NAME: $failures checks failed"
  exit 1
fi
echo "$NAME: passed"
