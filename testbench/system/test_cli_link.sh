#!/usr/bin/env bash
# simnic link add/show/delete and the daemon's life cycle, end to end, in a
# runtime directory of the test's own.
set -u
SIMNIC=$1
export SIMNIC_RUNTIME_DIR=$(mktemp -d /tmp/simnic-link-test.XXXXXX)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cleanup() {
  if [ -f "$SIMNIC_RUNTIME_DIR/simnicd.state" ]; then
    pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$SIMNIC_RUNTIME_DIR/simnicd.state")
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
  fi
  rm -rf "$SIMNIC_RUNTIME_DIR"
}
trap cleanup EXIT

# expect RC PATTERN CMD...: run CMD, check its exit code and that its output
# (stdout and stderr) matches the extended regex PATTERN.
expect() {
  local rc=$1 pat=$2; shift 2
  local out; out=$("$@" 2>&1); local got=$?
  [ "$got" -eq "$rc" ] || fail "'$*' exited $got, expected $rc: $out"
  [[ "$out" =~ $pat ]] || fail "'$*' printed '$out', expected /$pat/"
}
daemon_pid() { sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$SIMNIC_RUNTIME_DIR/simnicd.state"; }

expect 0 '^$' "$SIMNIC" link show                      # no daemon: nothing to show, none started
[ -e "$SIMNIC_RUNTIME_DIR/simnicd.sock" ] && fail "link show started a daemon"
expect 0 '^$' "$SIMNIC" link add rxe_lo type soft netdev lo
expect 0 '^link rxe_lo/1 state ACTIVE physical_state LINK_UP netdev lo$' "$SIMNIC" link show
expect 0 '^link rxe_lo/1 state ACTIVE physical_state LINK_UP netdev lo$' "$SIMNIC" link show rxe_lo/1
expect 0 '"ifname":"rxe_lo"' "$SIMNIC" link show -j

# Bad input: clear errors, nothing changes.
expect 1 'device rxe_lo already exists' "$SIMNIC" link add rxe_lo type soft netdev lo
expect 1 'netdev lo already has simnic device rxe_lo' "$SIMNIC" link add other type soft netdev lo
expect 1 'netdev nosuch0 does not exist' "$SIMNIC" link add x type soft netdev nosuch0
expect 1 "unknown device type 'rxe'" "$SIMNIC" link add x type rxe netdev lo
expect 1 "not allowed in a device name" "$SIMNIC" link add 'a/b' type soft netdev lo
expect 2 "unknown keyword 'mtu'" "$SIMNIC" link add x type soft netdev lo mtu 9000
expect 2 "'netdev' needs a value" "$SIMNIC" link add x type soft netdev
expect 2 "'type' and 'netdev' are required" "$SIMNIC" link add x netdev lo
expect 1 'no device nosuch' "$SIMNIC" link show nosuch
expect 1 'no device nosuch' "$SIMNIC" link delete nosuch
expect 0 '^link rxe_lo/1 ' "$SIMNIC" link show

# One daemon at a time.
expect 1 'another simnic daemon is running' "$SIMNIC" daemon --foreground

# A daemon killed mid-run: the next command says what was lost and recovers.
pid=$(daemon_pid)
kill -9 "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
expect 0 'simnic daemon \(pid [0-9]+\) is no longer running; its devices \(rxe_lo\) were lost' "$SIMNIC" link show
expect 0 '^$' "$SIMNIC" link add rxe_lo type soft netdev lo
[ "$(daemon_pid)" != "$pid" ] || fail "no new daemon after the old one died"

# A stale socket file with no daemon behind it.
pid=$(daemon_pid)
kill -9 "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
rm -f "$SIMNIC_RUNTIME_DIR/simnicd.state"
[ -S "$SIMNIC_RUNTIME_DIR/simnicd.sock" ] || fail "expected the dead daemon's socket to remain"
expect 0 'removed a stale socket' "$SIMNIC" link add rxe_lo type soft netdev lo
expect 0 '^link rxe_lo/1 ' "$SIMNIC" link show

expect 0 '^$' "$SIMNIC" link delete rxe_lo
expect 0 '^$' "$SIMNIC" link show

if [ "$failures" -eq 0 ]; then echo "cli link: all checks passed"; exit 0; fi
echo "cli link: $failures checks failed"; exit 1
