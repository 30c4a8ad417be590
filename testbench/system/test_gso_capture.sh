#!/usr/bin/env bash
# UDP GSO on lo and what a capture sees (issue 14). A soft device on lo sends
# a message's equal-sized packets to itself as one UDP GSO send while no
# packet socket is open on lo; a capture on lo would see such a send as one
# datagram, so while one is open (tcpdump, as in the tutorial) every packet
# leaves as its own datagram.
#   1. tcpdump -i lo udp port 4791 during ib_write_bw -s 65536: every
#      frame it captured is one RoCE packet with a valid ICRC (simnic pcap
#      --strict), none longer than the MTU allows, and every WRITE packet of
#      the run is there, as the device's own capture has them.
#   2. The same run without tcpdump: it completes, and the device sent and
#      received the same packets (simnic stats).
#   3. ib_write_bw -q 2 without tcpdump: no request out of sequence (unless
#      the kernel dropped a datagram).
# Needs root (tcpdump); CI runs as root.
#   test_gso_capture.sh SIMNIC LIBSIMNIC_VERBS
set -u
SIMNIC=$1 LIB=$2
DEV=simgso_lo
. "$(dirname "$0")/lib.sh"
sys_init gso_capture SIMNIC LIB
trap 'sys_cleanup server_pid dump_pid' EXIT
if [ "$(id -u)" -ne 0 ] || ! command -v tcpdump >/dev/null; then
  fail "needs root and tcpdump"
  sys_finish gso_capture
fi
N=200
port=$(free_port)

# One ib_write_bw -s 65536 -n $N on the device, server and client.
write_bw() {
  app timeout 60 ib_write_bw -d "$DEV" -s 65536 -n "$N" -p "$port" "$@" >"$work/server.out" 2>&1 &
  server_pid=$!
  wait_listen "$port" "$server_pid"
  app timeout 60 ib_write_bw -d "$DEV" -s 65536 -n "$N" -p "$port" "$@" 127.0.0.1 >"$work/client.out" 2>&1 ||
    fail "ib_write_bw client: $(tail -3 "$work/client.out")"
  wait "$server_pid" || fail "ib_write_bw server: $(tail -3 "$work/server.out")"
  server_pid=
}
# tx_packets and rx_packets of the device.
counters() { sim stats "$DEV" -j | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["tx_packets"], d["rx_packets"])'; }

link_add "$DEV" pcap "$SIMNIC_RUNTIME_DIR/dev.pcap"

# 1. With a capture on lo.
# A snapshot of 4300 bytes holds a whole packet (4128 bytes of UDP payload
# and the IPv4 and link headers) and gives the 64 MB ring (-B, KiB) about
# 15,000 slots, where lo's 64 KiB MTU would give 1,000. A GSO send would
# still show its whole UDP length.
capture_start "$work/lo.pcap" tcpdump -i lo -B 65536 -s 4300 udp port 4791
sleep 0.1  # the device looks for captures every 10 ms
write_bw
sleep 1
capture_stop
"$SIMNIC" pcap --strict "$work/lo.pcap" >"$work/lo.txt" 2>&1 || fail "tcpdump's capture: $(grep -v '^ ' "$work/lo.txt" | grep -iE 'bad|malformed|error' | head -3)"
# The longest datagram tcpdump saw: one packet of 4096 bytes of payload and
# its headers (IPv4 20, UDP 8, BTH 12, RETH 16, ICRC 4), not a GSO send.
longest=$(tcpdump -nn -r "$work/lo.pcap" 2>/dev/null | sed -n 's/.*UDP, length \([0-9]*\).*/\1/p' | sort -n | tail -1)
[ -n "$longest" ] && [ "$longest" -le 4128 ] || fail "a datagram of $longest bytes in tcpdump's capture (a GSO send?)"
writes=$(grep -cE 'RC_RDMA_WRITE_(FIRST|MIDDLE|LAST|ONLY)' "$work/lo.txt")
# What tcpdump's ring could not hold (a busy machine) it counts, on exit.
dropped=$(sed -n 's/^\([0-9]*\) packets* dropped by kernel.*/\1/p' "$work/lo.pcap.err")
[ "$writes" -ge $((N * 16 - ${dropped:-0})) ] ||
  fail "tcpdump saw $writes WRITE packets and dropped ${dropped:-?}, not the $((N * 16)) of the run"

# 2. Without one: the GSO path.
read -r tx0 rx0 < <(counters)
write_bw
read -r tx1 rx1 < <(counters)
[ $((tx1 - tx0)) -ge $((N * 16)) ] || fail "the device sent $((tx1 - tx0)) packets without a capture, fewer than $((N * 16))"
[ $((tx1 - tx0)) -eq $((rx1 - rx0)) ] || fail "sent $((tx1 - tx0)) and received $((rx1 - rx0)) packets on lo"
# 3. Two QPs (ib_write_bw -q 2): every packet in order. A whole message
# arriving as one GRO datagram makes the device answer enough at once to
# take later arrivals off the socket (the backlog); those must come before
# anything read after them, or the responder sees a PSN gap and NAKs.
# Only a datagram the kernel dropped (a full socket buffer) excuses one.
oos() { sim stats "$DEV" -j | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["out_of_seq_requests"])'; }
rcvbuf_errors() { awk '/^Udp: [0-9]/ {print $6}' /proc/net/snmp; }
o0=$(oos) e0=$(rcvbuf_errors)
write_bw -q 2
o1=$(oos) e1=$(rcvbuf_errors)
[ "$o1" -eq "$o0" ] || [ "$e1" -gt "$e0" ] ||
  fail "$((o1 - o0)) out-of-sequence requests with ib_write_bw -q 2 on lo, and no datagram dropped by the kernel"

sim link delete "$DEV" >/dev/null 2>&1  # closes and flushes its capture
"$SIMNIC" pcap --strict "$SIMNIC_RUNTIME_DIR/dev.pcap" >"$work/dev.txt" 2>&1 || fail "the device's own capture: $(tail -1 "$work/dev.txt")"
echo "gso_capture: tcpdump saw $writes WRITE packets (${dropped:-?} dropped by its ring), the longest datagram $longest bytes; without it $((tx1 - tx0)) packets"
sys_finish gso_capture
