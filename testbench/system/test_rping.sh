#!/usr/bin/env bash
# rping (librdmacm) against a simnic device on lo, as the tutorial runs it
# (section 4.3), as an ordinary user: when ctest runs as root the test drops
# to `nobody` for everything it starts.
#
#   test_rping.sh SIMNIC LIBSIMNIC_VERBS CM_PCAP_CHECK CM_COMPARE GOLDEN_DIR
#
# 1. No server: the client's REQ is rejected (invalid service ID).
# 2. Server and client, -C 10 -v: both succeed, every ping line carries
#    rping's data; the device's capture (and tcpdump's on lo, when root)
#    shows the CM MADs in rxe's order with valid ICRCs and the RC traffic on
#    the flow label's UDP port (cm_pcap_check); nothing is left behind.
#    The MADs of cases 1 and 2 are those kernel ib_cm sends for the same
#    exchanges between two kernel-rxe VMs (CM_COMPARE against the golden
#    captures cm_reject and rping of 6.1 and 6.12, all but each run's IDs,
#    QPNs, PSNs and addresses).
# 3. A server killed mid-run: the daemon sends the DREQ for it, the client
#    stops instead of waiting out its timers; nothing is left behind.
set -u
SIMNIC=$1 LIB=$2 CHECK=$3 COMPARE=$4 GOLDEN=$5
DEV=simrping_lo
PORT=$((20000 + RANDOM % 20000))
. "$(dirname "$0")/lib.sh"
sys_init rping SIMNIC LIB

trap 'sys_cleanup server_pid dump_pid' EXIT

# No process of the test holds anything on the device any more.
all_gone() {
  wait_no_qps
  nothing_left "$1" qps cqs mrs pds
}

# client ARGS...: rping's client of the server on $PORT, its output in
# $work/client.out (line by line, so that its progress can be followed), its
# exit status returned. Run once the server listens (wait_cm_listen: rping
# prints nothing then).
client() {
  app timeout 60 stdbuf -oL rping -c -a 127.0.0.1 -p "$PORT" "$@" >"$work/client.out" 2>&1
}

link_add "$DEV" pcap "$SIMNIC_RUNTIME_DIR/dev.pcap"

# tcpdump -i lo udp port 4791, as in the tutorial (root only), into
# $work/lo.pcap. Its kernel ring must hold a whole exchange: on lo (MTU 64K)
# the default 2 MB ring has 16 frame slots, and a tcpdump that the CPU did
# not run for a moment lost most of an rping ("206 packets dropped by
# kernel", the DREQ among them, while the device sent and received all 125).
# With 64 MB (-B, in KiB) it has 512, more than case 2's 250 copies.
# Capturing starts when tcpdump says it is listening.
start_dump() { capture_start "$work/lo.pcap" tcpdump -i lo -B 65536 udp port 4791; }
# stop_dump: tcpdump loses what is still in its ring when told to stop, so
# it is given (up to 10 s) until the capture passes the check first.
stop_dump() {
  for _ in $(seq 100); do "$CHECK" "$work/lo.pcap" >/dev/null 2>&1 && break; sleep 0.1; done
  capture_stop
}
if [ "$(id -u)" -eq 0 ] && command -v tcpdump >/dev/null && [ "${SIMNIC_LINK_OPTS:-}" != "loopback on" ]; then
  start_dump
fi

# 1. Nobody listens: REJ (invalid service ID 8), as kernel rxe answers.
app timeout 30 rping -c -a 127.0.0.1 -p "$PORT" -C 1 >"$work/rej.out" 2>&1 && fail "rping without a server succeeded"
grep -q "RDMA_CM_EVENT_REJECTED, error 8" "$work/rej.out" || fail "no REJECTED (8) without a server: $(cat "$work/rej.out")"
all_gone "after the rejected client"
# The device's capture so far holds only that: start it afresh for case 2.
sim link delete "$DEV" >/dev/null 2>&1
mv "$SIMNIC_RUNTIME_DIR/dev.pcap" "$work/rej.pcap" 2>/dev/null
link_add "$DEV" pcap "$SIMNIC_RUNTIME_DIR/dev.pcap"
[ -n "${dump_pid:-}" ] && { capture_stop; start_dump; }

# 2. The tutorial's exchange.
app timeout 60 rping -s -a 127.0.0.1 -p "$PORT" -C 10 -v >"$work/server.out" 2>&1 &
server_pid=$!
wait_cm_listen "$PORT" "$server_pid" || fail "rping's server does not listen: $(cat "$work/server.out")"
# Its ID, as `rdma resource show cm_id` shows kernel rdma_cm's.
sim resource show cm_id >"$work/cm_id.out" 2>&1
grep -Eq "^link $DEV/1 cm-idn [0-9]+ state LISTEN ps TCP pid [0-9]+ comm rping src-addr 127\.0\.0\.1:$PORT dst-addr " \
  "$work/cm_id.out" || fail "resource show cm_id, the listener: $(cat "$work/cm_id.out")"
client -C 10 -v
client_rc=$?
wait "$server_pid"; server_rc=$?; server_pid=
[ "$client_rc" -eq 0 ] || fail "client exited $client_rc"
[ "$server_rc" -eq 0 ] || fail "server exited $server_rc"
expected=$(rping_data 10 'ping data: ')
got=$(grep '^ping data: ' "$work/client.out")
[ "$got" == "$expected" ] || fail "client ping lines differ from rping's data: $got"
[ "$(grep -c '^server ping data: rdma-ping-' "$work/server.out")" -eq 10 ] || fail "server did not print 10 ping lines"
grep -q "server DISCONNECT EVENT" "$work/server.out" || fail "server saw no DISCONNECTED"
all_gone "after rping"
sim link delete "$DEV" >/dev/null 2>&1  # closes and flushes the capture
"$CHECK" "$SIMNIC_RUNTIME_DIR/dev.pcap" >"$work/check.out" 2>&1 || fail "device capture: $(cat "$work/check.out")"
"$SIMNIC" pcap --strict "$SIMNIC_RUNTIME_DIR/dev.pcap" >/dev/null || fail "simnic pcap --strict on the device capture"
compare_cm_mads "$work/rej.pcap" cm_reject
compare_cm_mads "$SIMNIC_RUNTIME_DIR/dev.pcap" rping
if [ -n "${dump_pid:-}" ]; then
  stop_dump
  "$CHECK" "$work/lo.pcap" >"$work/check_lo.out" 2>&1 ||
    fail "tcpdump -i lo capture ($(grep -E 'captured|dropped' "$work/lo.pcap.err" | tr '\n' ' ')): $(cat "$work/check_lo.out")"
fi

# 3. The server dies (SIGKILL) while the client pings for ever.
link_add "$DEV" pcap "$SIMNIC_RUNTIME_DIR/kill.pcap"
PORT=$((PORT + 1))
app timeout 60 rping -s -a 127.0.0.1 -p "$PORT" -C 0 >"$work/server.out" 2>&1 &
server_pid=$!
wait_cm_listen "$PORT" "$server_pid" || fail "rping's server does not listen: $(cat "$work/server.out")"
rm -f "$work/client.out"  # case 2's, with its ten pings, is not this client's
client -C 0 -v &
client_pid=$!
for _ in $(seq 300); do
  [ "$(grep -c '^ping data' "$work/client.out")" -ge 5 ] && break
  sleep 0.1
done
[ "$(grep -c '^ping data' "$work/client.out")" -ge 5 ] || fail "the endless client did not get going: $(cat "$work/client.out")"
# Connected: the listener, and the connection's two IDs (the server's, from
# the listener's port, and the client's), each with its RC QP.
sim resource show cm_id >"$work/cm_id.out" 2>&1
[ "$(grep -Ec " lqpn [0-9]+ qp-type RC state CONNECT ps TCP pid [0-9]+ comm rping src-addr 127\.0\.0\.1:[0-9]+ dst-addr 127\.0\.0\.1:[0-9]+$" "$work/cm_id.out")" -eq 2 ] &&
  grep -q " state LISTEN " "$work/cm_id.out" || fail "resource show cm_id, connected: $(cat "$work/cm_id.out")"
grep -Eq " src-addr 127\.0\.0\.1:$PORT dst-addr 127\.0\.0\.1:[0-9]+$" "$work/cm_id.out" ||
  fail "resource show cm_id: no server-side connection on port $PORT: $(cat "$work/cm_id.out")"
pkill -KILL -f -- "^rping -s -a 127.0.0.1 -p $PORT -C 0$"
wait "$server_pid" 2>/dev/null; server_pid=
# The client stops soon (it is not left waiting out its timeout) ...
wait "$client_pid"; client_rc=$?
[ "$client_rc" -ne 124 ] || fail "the client hung after its server died"
all_gone "after the killed server"
[ -z "$(sim resource show cm_id 2>&1)" ] || fail "rdma_cm IDs left after the killed server: $(sim resource show cm_id 2>&1)"
# ... because the daemon disconnected the dead server's connection: a DREQ
# from the server's side (its REP's communication ID) is on the wire.
sim link delete "$DEV" >/dev/null 2>&1
"$CHECK" --list "$SIMNIC_RUNTIME_DIR/kill.pcap" >"$work/kill.out" 2>&1 || fail "capture of the kill: $(cat "$work/kill.out")"
server_comm=$(sed -n 's/^[0-9]* REP comm \(0x[0-9a-f]*\) .*/\1/p' "$work/kill.out" | head -1)
grep -q "DREQ comm $server_comm " "$work/kill.out" || fail "no DREQ for the dead server's connection: $(cat "$work/kill.out")"

if [ "$failures" -ne 0 ]; then
  echo "--- server:"; cat "$work/server.out"
  echo "--- client:"; cat "$work/client.out"
else
  cat "$work/check.out"
  for f in "$work"/compare-*.out; do tail -1 "$f"; done
  [ -f "$work/check_lo.out" ] && { echo "tcpdump -i lo:"; tail -1 "$work/check_lo.out"; }
fi
sys_finish rping
