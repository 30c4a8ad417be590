#!/usr/bin/env bash
# RX_STATS_BLOCK's rx_overflow_drops (hw-spec 2.6.4): what the kernel drops
# at a device's UDP sockets for want of room is counted, so that a user can
# tell a loss on the host's side from the device's own drops. The daemon is
# stopped (SIGSTOP) while more datagrams go to its UDP 4791 than its socket
# holds, then continued; one more datagram brings it the socket's drop
# count. Every datagram sent must then be either received (not RoCE: the
# device counts it in icrc_errors) or counted dropped, and the drops must be
# this network namespace's UDP RcvbufErrors, every one; `simnic doctor`
# then warns of them.
#
# In a network namespace of its own (a user namespace too when not root),
# so that its device on lo takes nobody's UDP 4791 and the kernel's UDP
# counters are its own.
#   test_rx_overflow.sh SIMNIC
set -u
. "$(dirname "$0")/lib.sh"
own_netns "$@"
SIMNIC=$1
FLOOD=20000  # 1 KiB datagrams: 20 MB, past any socket buffer rmem_max allows here
sys_init --as-caller rx_overflow
ip link set lo up
dpid=
cleanup() {
  [ -n "$dpid" ] && kill -CONT "$dpid" 2>/dev/null
  "$SIMNIC" daemon --stop >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
DEV=ovfl_lo

# The namespace's UDP RcvbufErrors (/proc/net/snmp's second Udp: line).
rcvbuf_errors() { awk '/^Udp:/ { if (++n == 2) print $6 }' /proc/net/snmp; }
# send N: N datagrams of 1 KiB of zeros to 127.0.0.1:4791.
send() {
  python3 - "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(int(sys.argv[1])):
    s.sendto(bytes(1024), ("127.0.0.1", 4791))
EOF
}

sim link add "$DEV" type soft netdev lo || { echo "FAIL: link add"; exit 1; }
# simnic doctor lists the check only once there are drops.
sim doctor "$DEV" >"$work/doctor0.txt" 2>&1
grep -Eq '^[A-Z]+ +rx_overflow ' "$work/doctor0.txt" && fail "doctor warns of drops before any: $(grep -E '^[A-Z]+ +rx_overflow ' "$work/doctor0.txt")"
dpid=$(daemon_pid)
[ -n "$dpid" ] || fail "no daemon pid"
before=$(rcvbuf_errors)
kill -STOP "$dpid"
send "$FLOOD"
kill -CONT "$dpid"
dpid=
# The socket's drop count comes with the next datagram after its drops.
sleep 0.2
send 1
for _ in $(seq 100); do
  got=$(stat_of "$DEV" icrc_errors) dropped=$(stat_of "$DEV" rx_overflow_drops)
  [ $((${got:-0} + ${dropped:-0})) -ge $((FLOOD + 1)) ] && break
  sleep 0.1
done
kernel=$(( $(rcvbuf_errors) - before ))
echo "sent $((FLOOD + 1)), received ${got:-none}, rx_overflow_drops ${dropped:-none}, kernel RcvbufErrors $kernel"
[ -n "$dropped" ] || fail "simnic stats lacks rx_overflow_drops"
[ "${dropped:-0}" -gt 0 ] || fail "nothing dropped: the flood fit in the socket's buffer"
[ "${dropped:-0}" -eq "$kernel" ] || fail "rx_overflow_drops $dropped, the kernel's RcvbufErrors $kernel"
[ $((${got:-0} + ${dropped:-0})) -eq $((FLOOD + 1)) ] || fail "received $got and dropped $dropped of $((FLOOD + 1))"
sim doctor "$DEV" >"$work/doctor.txt" 2>&1
rc=$?
line=$(grep -E '^[A-Z]+ +rx_overflow ' "$work/doctor.txt")
echo "$line"
[ "$rc" -eq 0 ] || fail "doctor exited $rc: a warning keeps it 0"
[[ "$line" = "WARN  rx_overflow $DEV"*"the kernel dropped $dropped datagrams"* ]] || fail "doctor: ${line:-no rx_overflow check}"
sys_finish rx_overflow
