#!/usr/bin/env bash
# simnic link add/show/delete, resource show (every object of two
# applications, and none once they exit) and the daemon's life cycle, end to
# end, in a runtime directory of the test's own.
set -u
SIMNIC=$1
. "$(dirname "$0")/lib.sh"
sys_init --as-caller link-test
trap 'sys_cleanup rc_pid srq_pid' EXIT

# expect RC PATTERN CMD...: run CMD, check its exit code and that its output
# (stdout and stderr) matches the extended regex PATTERN.
expect() {
  local rc=$1 pat=$2; shift 2
  local out; out=$("$@" 2>&1); local got=$?
  [ "$got" -eq "$rc" ] || fail "'$*' exited $got, expected $rc: $out"
  [[ "$out" =~ $pat ]] || fail "'$*' printed '$out', expected /$pat/"
}
# kill_daemon: SIGKILL for the daemon, whose pid is left in $pid.
kill_daemon() {
  pid=$(daemon_pid)
  kill -9 "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
}

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
expect 2 "unknown keyword 'speed'" "$SIMNIC" link add x type soft netdev lo speed 100
expect 2 "'mtu' applies to a device on a wire" "$SIMNIC" link add x type soft netdev lo mtu 9000
expect 2 "'netdev' needs a value" "$SIMNIC" link add x type soft netdev
expect 2 "'type' and one of 'netdev' or 'wire' are required" "$SIMNIC" link add x netdev lo
for v in 101 -1 5x; do
  expect 1 'ack_hold_us must be 0 to 100' "$SIMNIC" link add x type soft netdev lo ack_hold_us "$v"
done
expect 1 "'ack_hold_us' must be 1 to 3 bytes" "$SIMNIC" link add x type soft netdev lo ack_hold_us ''
expect 2 "'ack_hold_us' given twice" "$SIMNIC" link add x type soft netdev lo ack_hold_us 1 ack_hold_us 2
expect 1 'no device nosuch' "$SIMNIC" link show nosuch
expect 1 'no device nosuch' "$SIMNIC" link delete nosuch
expect 0 '^link rxe_lo/1 ' "$SIMNIC" link show

# `resource show cq|mr|pd|srq` list every object with its owner, like
# `rdma resource show`: an ibv_rc_pingpong and an ibv_srq_pingpong server wait
# for their clients (every object already created), then finish and leave
# nothing behind.
expect 0 '^0: rxe_lo: pd 0 cq 0 qp 0 mr 0 srq 0 ah 0 ctx 0$' "$SIMNIC" resource show
for kind in cq mr pd srq; do expect 0 '^$' "$SIMNIC" resource show $kind; done
expect 0 '^\[\]$' "$SIMNIC" resource show cq -j
expect 2 "unknown resource 'bogus'" "$SIMNIC" resource show bogus
PORT=$(free_port 2)
"$SIMNIC" exec -- ibv_rc_pingpong -d rxe_lo -g 1 -p "$PORT" >/dev/null 2>&1 &
rc_pid=$!  # simnic exec execs the tool: this is its pid
"$SIMNIC" exec -- ibv_srq_pingpong -d rxe_lo -g 1 -p $((PORT + 1)) >/dev/null 2>&1 &
srq_pid=$!
wait_listen "$PORT" "$rc_pid"
wait_listen $((PORT + 1)) "$srq_pid"
# has_line PATTERN CMD...: some line of CMD's output matches the regex.
has_line() {
  local pat=$1; shift
  local out; out=$("$@" 2>&1) || fail "'$*' exited $?: $out"
  grep -Eq -- "$pat" <<<"$out" || fail "'$*' has no line /$pat/: $out"
}
rc_comm="pid $rc_pid comm ibv_rc_pingpong\$"
srq_comm="pid $srq_pid comm ibv_srq_pingpon\$"  # /proc/PID/comm keeps 15 characters
# The rc server: one PD (its MR and QP use it), one CQ (both sides of the QP), one MR.
has_line "^dev rxe_lo cqn [0-9]+ cqe [0-9]+ users 2 ctxn [0-9]+ $rc_comm" "$SIMNIC" resource show cq
has_line "^dev rxe_lo mrn [0-9]+ rkey 0x[0-9a-f]+ lkey 0x[0-9a-f]+ iova 0x[0-9a-f]+ mrlen 4096 pdn [0-9]+ $rc_comm" \
  "$SIMNIC" resource show mr
has_line "^dev rxe_lo pdn [0-9]+ users 2 ctxn [0-9]+ $rc_comm" "$SIMNIC" resource show pd
# The srq server: its SRQ with the QPs on it (16 by default).
has_line "^dev rxe_lo srqn [0-9]+ type BASIC lqpn [0-9,-]+ pdn [0-9]+ max_wr [0-9]+ max_sge 1 limit 0 $srq_comm" \
  "$SIMNIC" resource show srq
for kind in cq mr pd; do has_line "$srq_comm" "$SIMNIC" resource show $kind; done
# The MR is in the PD of the same process.
pdn=$("$SIMNIC" resource show pd | sed -n "s/^dev rxe_lo pdn \([0-9]*\) .* pid $rc_pid .*/\1/p")
has_line "^dev rxe_lo mrn .* pdn $pdn $rc_comm" "$SIMNIC" resource show mr
# JSON: one array of objects with the same fields; -d filters by device.
has_line "^\[\{\"ifname\":\"rxe_lo\",\"cqn\":[0-9]+,\"cqe\":[0-9]+,\"users\":[0-9]+,\"ctxn\":[0-9]+,\"pid\":[0-9]+,\"comm\":\"[^\"]+\"\}," \
  "$SIMNIC" resource show cq -j
for kind in cq mr pd; do has_line "\"pid\":$rc_pid,\"comm\":\"ibv_rc_pingpong\"\}" "$SIMNIC" resource show $kind -j; done
has_line "\"srqn\":[0-9]+,\"type\":\"BASIC\",\"lqpn\":\[[0-9,]+\]" "$SIMNIC" resource show srq -j
[ "$("$SIMNIC" resource show pd -d rxe_lo)" = "$("$SIMNIC" resource show pd)" ] || fail "resource show pd -d rxe_lo differs"
expect 1 'no device nosuch' "$SIMNIC" resource show cq -d nosuch
# The summary and the QP listing are as they were.
expect 0 '^0: rxe_lo: pd 2 cq 2 qp 17 mr 2 srq 1 ah 0 ctx 2$' "$SIMNIC" resource show
has_line "^link rxe_lo/1 lqpn [0-9]+ rqpn [0-9]+ type RC state [A-Z]+ rq-psn [0-9]+ sq-psn [0-9]+ $rc_comm" \
  "$SIMNIC" resource show qp
# The clients run; both servers finish and exit.
timeout 60 "$SIMNIC" exec -- ibv_rc_pingpong -d rxe_lo -g 1 -p "$PORT" 127.0.0.1 >/dev/null 2>&1 ||
  fail "ibv_rc_pingpong client failed"
timeout 60 "$SIMNIC" exec -- ibv_srq_pingpong -d rxe_lo -g 1 -p $((PORT + 1)) 127.0.0.1 >/dev/null 2>&1 ||
  fail "ibv_srq_pingpong client failed"
for p in "$rc_pid" "$srq_pid"; do
  for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$p" 2>/dev/null && { fail "server $p still running"; kill "$p"; }
  wait "$p" || fail "server $p exited $?"
done
for kind in cq mr pd srq; do
  expect 0 '^$' "$SIMNIC" resource show $kind
  expect 0 '^\[\]$' "$SIMNIC" resource show $kind -j
done
expect 0 '^0: rxe_lo: pd 0 cq 0 qp 0 mr 0 srq 0 ah 0 ctx 0$' "$SIMNIC" resource show

# One daemon at a time.
expect 1 'another simnic daemon is running' "$SIMNIC" daemon --foreground

# A daemon killed mid-run: the next command says what was lost and recovers.
kill_daemon
expect 0 'simnic daemon \(pid [0-9]+\) is no longer running; its devices \(rxe_lo\) were lost' "$SIMNIC" link show
expect 0 '^$' "$SIMNIC" link add rxe_lo type soft netdev lo
[ "$(daemon_pid)" != "$pid" ] || fail "no new daemon after the old one died"

# A stale socket file with no daemon behind it.
kill_daemon
rm -f "$SIMNIC_RUNTIME_DIR/simnicd.state"
[ -S "$SIMNIC_RUNTIME_DIR/simnicd.sock" ] || fail "expected the dead daemon's socket to remain"
expect 0 'removed a stale socket' "$SIMNIC" link add rxe_lo type soft netdev lo
expect 0 '^link rxe_lo/1 ' "$SIMNIC" link show

expect 0 '^$' "$SIMNIC" link delete rxe_lo
expect 0 '^$' "$SIMNIC" link show

# ack_hold_us: the default is not listed; another value is, and kept.
expect 0 '^$' "$SIMNIC" link add rxe_lo type soft netdev lo ack_hold_us 0
expect 0 '"ack_hold_us":0' "$SIMNIC" link show -j
expect 0 '^$' "$SIMNIC" link delete rxe_lo
expect 0 '^$' "$SIMNIC" link add rxe_lo type soft netdev lo ack_hold_us 50
out=$("$SIMNIC" link show -j)
[[ "$out" == *ack_hold_us* ]] && fail "the default ack_hold_us is listed: $out"
expect 0 '^$' "$SIMNIC" link delete rxe_lo

sys_finish "cli link"
