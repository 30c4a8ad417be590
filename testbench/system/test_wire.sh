#!/usr/bin/env bash
# Devices on a wire of frames (`simnic link add ... wire 127.0.0.1:PORT addr
# A.B.C.D/N`): two devices on a `simnic wire` this test starts on an
# ephemeral port, unmodified tools between them (their TCP side channel over
# lo, their RoCE traffic over the wire), and the wire's capture checked
# against rxe's wire rules. As an ordinary user: under root the test drops to
# `nobody` for everything it starts.
#
#   test_wire.sh CASE SIMNIC LIBSIMNIC_VERBS CM_PCAP_CHECK
#
# CASE:
#   rc_pingpong   ibv_rc_pingpong -g 1; ibv_devinfo, the GID table, stats,
#                 the device's capture against the wire's
#   ib_write_bw   ib_write_bw (its figure printed)
#   rping         rping -C 10 -V across the wire: the CM over the wire
#   neighbours    ARP and neighbour solicitations answered for the device's
#                 addresses and nothing else
#   unanswered    a peer that never answers ARP: the verb fails cleanly, and
#                 so does rdma_cm's address query (ADDR_ERROR)
#   cli           link add's errors, several devices on one wire, link show
#   congestion    congestion control on both devices ([congestion] enable = 1),
#                 the wire marking 2% of ECN-capable frames CE as a congested
#                 switch would: ib_write_bw wb -> wa completes; wa answers marks
#                 with CNPs, wb's QP is rate-limited (simnic stats while it
#                 runs); the capture has ECT(0) requests, CE marks and CNPs
#                 with [congestion] cnp_dscp (40 here)
#   mckey         mckey's UD multicast from wb to a group a receiver on each
#                 device joined: the frames go to 239.1.2.3 and its MAC
#                 01:00:5e:01:02:03, which wa's filter takes while a QP is
#                 attached; wb's receiver gets its own device's copies
# The second device is of type $SIMNIC_DEVICE_TYPE (default soft): a model
# device on the wire runs the same cases.
set -u
CASE=$1 SIMNIC=$2 LIB=$3 CM_CHECK=$4
HERE=$(cd "$(dirname "$0")" && pwd)
TYPE_B=${SIMNIC_DEVICE_TYPE:-soft}
. "$HERE/lib.sh"
sys_init wire SIMNIC LIB
sys_dir out
OUT=$work/out
run() { "${AS[@]}" env LD_PRELOAD="$LIB" "$@"; }
TCP=$((20000 + RANDOM % 20000))
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  [ -n "${wire_pid:-}" ] && kill "$wire_pid" 2>/dev/null
  sys_cleanup
}
trap cleanup EXIT

# A wire on an ephemeral port of 127.0.0.1, capturing every frame.
start_wire() {
  rm -f "$OUT/wire.ready"
  "${AS[@]}" "$SIMNIC" wire --ready-file "$OUT/wire.ready" --pcap "$OUT/wire.pcap" -q &
  wire_pid=$!
  for _ in $(seq 50); do [ -s "$OUT/wire.ready" ] && break; sleep 0.1; done
  WIRE=$(awk '{print $2}' "$OUT/wire.ready")
  [ -n "$WIRE" ] || { echo "FAIL: the wire did not start"; exit 1; }
}
# Stops the wire (its capture is complete then).
stop_wire() {
  kill "$wire_pid"; wait "$wire_pid" 2>/dev/null; wire_pid=
}

# The wire's capture: valid ICRCs (simnic's packet core and an independent
# check), IP IDs, DF, ARP before RoCE, source ports.
check_wire() {
  "$SIMNIC" pcap --strict "$OUT/wire.pcap" >"$OUT/strict.out" || fail "simnic pcap --strict on the wire: $(tail -3 "$OUT/strict.out")"
  python3 "$HERE/wire_check.py" "$@" "$OUT/wire.pcap" >"$OUT/check.out" 2>&1 || fail "wire capture: $(cat "$OUT/check.out")"
  cat "$OUT/check.out"
}

two_devices() {
  start_wire
  sim link add wa type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 pcap "$OUT/wa.pcap" ||
    { echo "FAIL: link add wa"; exit 1; }
  sim link add wb type "$TYPE_B" wire "127.0.0.1:$WIRE" addr 10.0.0.11/24 ||
    { echo "FAIL: link add wb"; exit 1; }
}

# Server on wa, client on wb, TCP over lo; both must succeed.
server_client() {
  run timeout 120 "$@" -d wa >"$OUT/server.out" 2>&1 &
  local sp=$! rc
  pids+=("$sp")
  sleep 0.5
  for _ in $(seq 20); do
    run timeout 120 "$@" -d wb 127.0.0.1 >"$OUT/client.out" 2>&1
    rc=$?
    grep -q "Couldn't connect to 127.0.0.1" "$OUT/client.out" || break
    sleep 0.3  # the server is not listening yet
  done
  [ "$rc" -eq 0 ] || fail "client: $1 exited $rc: $(cat "$OUT/client.out")"
  wait "$sp" || fail "server: $1 failed: $(cat "$OUT/server.out")"
}

case_rc_pingpong() {
  two_devices
  # The device as the tools see it: a RoCE port, GID 0 fe80::EUI-64(MAC),
  # GID 1 ::ffff:10.0.0.10, MTU 1500 -> active 1024.
  local mac ll
  mac=$(sim link show -j wa | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["mac"])')
  ll=$(python3 -c "import ipaddress,sys; m=bytes.fromhex('$mac'.replace(':','')); print(ipaddress.IPv6Address(bytes.fromhex('fe80000000000000')+bytes([m[0]^2])+m[1:3]+b'\xff\xfe'+m[3:]))")
  run ibv_devinfo -v -d wa >"$OUT/devinfo.out" 2>&1 || fail "ibv_devinfo: $(cat "$OUT/devinfo.out")"
  grep -q "state:.*PORT_ACTIVE" "$OUT/devinfo.out" || fail "port not active"
  grep -q "active_mtu:.*1024" "$OUT/devinfo.out" || fail "active MTU is not 1024"
  grep -q "GID\[  0\]:.*$ll, RoCE v2" "$OUT/devinfo.out" || fail "GID 0 is not $ll: $(grep GID "$OUT/devinfo.out")"
  grep -q "GID\[  1\]:.*::ffff:10.0.0.10, RoCE v2" "$OUT/devinfo.out" || fail "GID 1 is not ::ffff:10.0.0.10"
  sim resource show gid >"$OUT/gid.out"
  grep -q "link wa/1 index 0 gid $ll" "$OUT/gid.out" || fail "resource show gid: $(cat "$OUT/gid.out")"
  grep -q "link wb/1 index 1 gid ::ffff:10.0.0.11" "$OUT/gid.out" || fail "resource show gid: $(cat "$OUT/gid.out")"

  server_client ibv_rc_pingpong -g 1 -n 500 -s 4096 -p "$TCP"
  grep -q "500 iters in" "$OUT/client.out" || fail "no pingpong result"
  grep "iters in" "$OUT/client.out"
  local tx rx
  tx=$(stat_of wa tx_packets) rx=$(stat_of wa rx_packets)
  # 500 iterations of a 4-packet SEND and its ACK each way.
  [ "${tx:-0}" -ge 2500 ] && [ "${rx:-0}" -ge 2500 ] || fail "wa counted tx $tx rx $rx packets"
  [ "$(stat_of wa tx_drops)" = 0 ] || fail "wa dropped frames"
  sim link delete wa; sim link delete wb
  stop_wire
  check_wire
  # The device's capture: every RoCE frame it sent or received, with the
  # MACs that were on the wire (the same frames as the wire's, no more).
  "$SIMNIC" pcap --strict "$OUT/wa.pcap" >"$OUT/wa.out" || fail "device capture: $(tail -3 "$OUT/wa.out")"
  local nd nw
  nd=$(tail -1 "$OUT/wa.out" | awk '{print $2}')
  nw=$(python3 - "$OUT/wire.pcap" "$OUT/wa.pcap" <<'PY'
import struct, sys
def frames(p):
    f = open(p, "rb"); f.read(24); out = []
    while True:
        h = f.read(16)
        if len(h) < 16: return out
        n = struct.unpack("<IIII", h)[2]; out.append(f.read(n))
wire = [d for d in frames(sys.argv[1]) if d[12:14] == b"\x08\x00"]
dev = frames(sys.argv[2])
# The same frames, byte for byte (MACs included), in any order.
print(len(wire) if sorted(wire) == sorted(dev) else -1)
PY
)
  [ "$nd" = "$nw" ] || fail "the device's capture ($nd frames) is not the wire's RoCE frames ($nw)"
}

case_ib_write_bw() {
  two_devices
  server_client ib_write_bw -s 65536 -n 2000 --report_gbits -p "$TCP"
  grep -A1 "BW average" "$OUT/client.out" | tail -1 | awk '$1 == 65536 {ok=1} END {exit !ok}' ||
    fail "no ib_write_bw result: $(cat "$OUT/client.out")"
  echo "ib_write_bw wa <- wb ($TYPE_B): $(grep -A1 'BW average' "$OUT/client.out" | tail -1)"
  sim stats wb | grep -E "^ *(tx_packets|retransmits|timeouts|tx_drops) "
  sim link delete wa; sim link delete wb
  stop_wire
  check_wire
}

case_congestion() {
  rm -f "$OUT/wire.ready"
  "${AS[@]}" "$SIMNIC" wire --ready-file "$OUT/wire.ready" --pcap-delivered "$OUT/wire.pcap" \
    --fault ce=2% -q &
  wire_pid=$!
  for _ in $(seq 50); do [ -s "$OUT/wire.ready" ] && break; sleep 0.1; done
  WIRE=$(awk '{print $2}' "$OUT/wire.ready")
  [ -n "$WIRE" ] || { echo "FAIL: the wire did not start"; exit 1; }
  # CNPs with DSCP 40 (priority 5), not the default 48: the key reaches them.
  printf '[congestion]\nenable = 1\ncnp_dscp = 40\n' >"$OUT/cc.toml"
  chmod a+r "$OUT/cc.toml"
  sim link add wa type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 config "$OUT/cc.toml" ||
    { echo "FAIL: link add wa"; exit 1; }
  sim link add wb type "$TYPE_B" wire "127.0.0.1:$WIRE" addr 10.0.0.11/24 config "$OUT/cc.toml" ||
    { echo "FAIL: link add wb"; exit 1; }
  # The reaction points while the transfer runs (they go with their QPs).
  ( for _ in $(seq 300); do sim stats -j wb >>"$OUT/wb-stats.jsonl" 2>/dev/null; sleep 0.1; done ) &
  local sampler=$!
  pids+=("$sampler")
  server_client ib_write_bw -s 65536 -n 2000 --report_gbits -p "$TCP"
  kill "$sampler" 2>/dev/null
  grep -A1 "BW average" "$OUT/client.out" | tail -1 | awk '$1 == 65536 {ok=1} END {exit !ok}' ||
    fail "no ib_write_bw result: $(cat "$OUT/client.out")"
  echo "ib_write_bw wa <- wb ($TYPE_B) with congestion control: $(grep -A1 'BW average' "$OUT/client.out" | tail -1)"
  sim stats wa >"$OUT/wa-stats.out"; sim stats wb >"$OUT/wb-stats.out"
  grep -q "congestion control: on (DCQCN)" "$OUT/wa-stats.out" || fail "stats: $(cat "$OUT/wa-stats.out")"
  local ce sent supp recv
  ce=$(stat_of wa ce_packets) sent=$(stat_of wa cnp_sent) supp=$(stat_of wa cnp_suppressed) recv=$(stat_of wb cnp_received)
  echo "wa: ce_packets $ce cnp_sent $sent cnp_suppressed $supp; wb: cnp_received $recv rate_limit_holds $(stat_of wb rate_limit_holds)"
  [ "${ce:-0}" -gt 0 ] || fail "wa saw no CE-marked packet"
  [ "${sent:-0}" -gt 0 ] || fail "wa sent no CNP"
  [ "$((sent + supp))" = "$ce" ] || fail "CE packets ($ce) are not CNPs sent ($sent) + suppressed ($supp)"
  [ "${recv:-0}" -gt 0 ] && [ "$recv" -le "$sent" ] || fail "wb received $recv CNPs of $sent"
  [ "$(stat_of wa cnp_received)" = 0 ] || fail "wa received CNPs: nothing it sent is ECN-capable but its requests"
  # A sample where wb's QP was rate-limited: Rc below Rt, both at most the
  # line rate, alpha raised by CNPs.
  python3 - "$OUT/wb-stats.jsonl" <<'PY' || fail "no sample of wb's QP rate-limited: $(tail -2 "$OUT/wb-stats.jsonl")"
import json, sys
pick = None
for line in open(sys.argv[1]):
    try: j = json.loads(line)
    except ValueError: continue
    for q in j.get("congestion", {}).get("qps", []):
        if q["rate_limited"] and q["cnps_received"] > 0 and (pick is None or q["rate_gbps"] < pick["rate_gbps"]):
            pick = q
if pick is None: sys.exit("no sample")
print(f"wb qp {pick['qpn']} (its slowest sample): Rc {pick['rate_gbps']:.3f} Gb/s Rt {pick['target_rate_gbps']:.3f} Gb/s "
      f"alpha {pick['alpha']:.4f} rate-limited {pick['rate_limited_us']:.0f} us cnps {pick['cnps_received']}")
assert pick["rate_gbps"] < pick["target_rate_gbps"] <= 100 and 0 < pick["alpha"] <= 1 and pick["rate_limited_us"] > 0
PY
  sim link delete wa; sim link delete wb
  stop_wire
  "$SIMNIC" pcap --strict "$OUT/wire.pcap" >"$OUT/strict.out" || fail "simnic pcap --strict on the wire: $(tail -3 "$OUT/strict.out")"
  # The capture as delivered: wb's requests ECT(0) or CE, everything else
  # Not-ECT; CNPs (opcode 0x81, BECN) from wa to wb's QP, with the DSCP of
  # cnp_dscp.
  python3 - "$OUT/wire.pcap" <<'PY' || fail "wire capture"
import struct, sys
REQUESTS = set(range(0x00, 0x0D)) | {0x13, 0x14, 0x16, 0x17, 0x1C, 0x1D}  # RC requests
RESPONSES = set(range(0x0D, 0x13))  # RC READ responses, ACK, atomic ACK
f = open(sys.argv[1], "rb"); f.read(24)
req = [0, 0, 0, 0]; resp_ect = 0; cnps = 0
while True:
    h = f.read(16)
    if len(h) < 16: break
    d = f.read(struct.unpack("<IIII", h)[2])
    if d[12:14] != b"\x08\x00" or d[23] != 17 or struct.unpack(">H", d[36:38])[0] != 4791: continue
    ecn = d[15] & 3; op = d[42]
    if op == 0x81:
        cnps += 1
        assert d[46] & 0x40, "a CNP without BECN"
        assert ecn == 0, "an ECN-capable CNP"
        assert d[15] >> 2 == 40, f"a CNP with DSCP {d[15] >> 2}, not [congestion] cnp_dscp 40"
        assert d[30:34] == bytes([10, 0, 0, 11]), "a CNP not to wb"
    elif op in REQUESTS:
        req[ecn] += 1
    elif op in RESPONSES and ecn != 0:
        resp_ect += 1
print(f"RC requests by ECN (Not-ECT, ECT(1), ECT(0), CE): {req}; CNPs {cnps}")
assert req[0] == 0 and req[1] == 0, "a request without ECT(0)"
assert req[2] > 0 and req[3] > 0, "no ECT(0) or no CE-marked request"
assert resp_ect == 0, f"{resp_ect} responses or ACKs are ECN-capable"
assert cnps > 0, "no CNP on the wire"
PY
}

case_rping() {
  two_devices
  # The server listens on wa's address; the client binds wb's (its own
  # device: both are on this host, and the CM would otherwise route a local
  # address to its own device, as the kernel does).
  run timeout 60 rping -s -a 10.0.0.10 -p "$TCP" -C 10 -V >"$OUT/server.out" 2>&1 &
  local sp=$! rc
  pids+=("$sp")
  for _ in $(seq 20); do
    sleep 0.3
    run timeout 60 rping -c -I 10.0.0.11 -a 10.0.0.10 -p "$TCP" -C 10 -V -v >"$OUT/client.out" 2>&1
    rc=$?
    grep -q "RDMA_CM_EVENT_REJECTED, error 8" "$OUT/client.out" || break  # no listener yet
  done
  [ "$rc" -eq 0 ] || fail "rping client exited $rc: $(cat "$OUT/client.out")"
  wait "$sp" || fail "rping server failed: $(cat "$OUT/server.out")"
  [ "$(grep -c '^ping data: rdma-ping-' "$OUT/client.out")" -eq 10 ] || fail "client did not print 10 pings"
  [ "$(stat_of wb tx_packets)" -gt 0 ] && [ "$(stat_of wa rx_packets)" -gt 0 ] || fail "nothing crossed the wire"
  sim link delete wa; sim link delete wb
  stop_wire
  "$CM_CHECK" "$OUT/wire.pcap" >"$OUT/cm.out" 2>&1 || fail "the CM on the wire: $(cat "$OUT/cm.out")"
  tail -1 "$OUT/cm.out"
  check_wire --cm
}

case_mckey() {
  two_devices
  # A receiver on each device, the sender on wb: wa's gets the frames from
  # the wire, wb's its own device's copies (the hub never returns a frame to
  # its sender; the device loops what it sends to a group it is in, as the
  # kernel does for its host's members).
  run timeout 60 stdbuf -oL mckey -m 239.1.2.3 -b 10.0.0.10 >"$OUT/server.out" 2>&1 &
  local sp=$!
  pids+=("$sp")
  run timeout 60 stdbuf -oL mckey -m 239.1.2.3 -b 10.0.0.11 >"$OUT/server_b.out" 2>&1 &
  local sb=$!
  pids+=("$sb")
  for _ in $(seq 100); do
    grep -q '^mckey: joined dgid: ::ffff:239.1.2.3' "$OUT/server.out" &&
      grep -q '^mckey: joined dgid: ::ffff:239.1.2.3' "$OUT/server_b.out" && break
    sleep 0.1
  done
  run timeout 60 mckey -m 239.1.2.3 -s -b 10.0.0.11 >"$OUT/client.out" 2>&1 ||
    fail "mckey sender: $(cat "$OUT/client.out")"
  wait "$sp" || fail "mckey receiver on wa: $(cat "$OUT/server.out")"
  grep -q '^data transfers complete' "$OUT/server.out" || fail "mckey receiver on wa: $(cat "$OUT/server.out")"
  wait "$sb" || fail "mckey receiver on wb: $(cat "$OUT/server_b.out")"
  grep -q '^data transfers complete' "$OUT/server_b.out" || fail "mckey receiver on wb: $(cat "$OUT/server_b.out")"
  [ "$(stat_of wa rx_packets)" -ge 10 ] || fail "wa received $(stat_of wa rx_packets) packets"
  sim link delete wa; sim link delete wb
  stop_wire
  "$SIMNIC" pcap --strict "$OUT/wire.pcap" >"$OUT/strict.out" || fail "simnic pcap --strict on the wire: $(tail -3 "$OUT/strict.out")"
  [ "$(grep -c "10.0.0.11:[0-9]* > 239.1.2.3:4791 UD_SEND_ONLY_WITH_IMMEDIATE QP=0xffffff .* qkey=0x1234567 " "$OUT/strict.out")" -eq 10 ] ||
    fail "not 10 multicast SENDs on the wire: $(grep 239.1.2.3 "$OUT/strict.out")"
  # Every frame to the group carries the group's MAC (RFC 1112: 01:00:5e and
  # the address's low 23 bits).
  python3 - "$OUT/wire.pcap" <<'PY' || fail "a frame to 239.1.2.3 without the group's MAC"
import struct, sys
f = open(sys.argv[1], "rb"); f.read(24); n = 0
while True:
    h = f.read(16)
    if len(h) < 16: break
    d = f.read(struct.unpack("<IIII", h)[2])
    if d[12:14] == b"\x08\x00" and d[30:34] == bytes([239, 1, 2, 3]):
        n += 1
        if d[0:6] != bytes.fromhex("01005e010203"): sys.exit(1)
sys.exit(0 if n == 10 else 1)
PY
}

case_neighbours() {
  start_wire
  sim link add wa type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 addr fd00::10/64 mac 02:00:00:00:00:10 ||
    { echo "FAIL: link add"; exit 1; }
  # Answered: its IPv4 address, its link-local address (EUI-64 of the MAC)
  # and fd00::10. Not: a neighbour's addresses, another link-local one.
  python3 "$HERE/wire_probe.py" ask "$WIRE" --arp 10.0.0.10 --arp 10.0.0.11 --arp 10.0.0.1 \
    --ns fe80::ff:fe00:10 --ns fd00::10 --ns fd00::11 --ns fe80::ff:fe00:11 >"$OUT/ask.out" 2>&1 ||
    fail "malformed answers: $(cat "$OUT/ask.out")"
  cat "$OUT/ask.out"
  cat >"$OUT/want.out" <<'EOF'
arp 10.0.0.10 02:00:00:00:00:10
arp 10.0.0.11 none
arp 10.0.0.1 none
ns fe80::ff:fe00:10 02:00:00:00:00:10 SO
ns fd00::10 02:00:00:00:00:10 SO
ns fd00::11 none
ns fe80::ff:fe00:11 none
EOF
  diff "$OUT/want.out" "$OUT/ask.out" >/dev/null || fail "answers differ: $(diff "$OUT/want.out" "$OUT/ask.out")"
  sim link delete wa
  stop_wire
  # The device sent nothing but its three answers (one ARP reply, two
  # advertisements): no request of its own, nothing for the others.
  local sent
  sent=$(python3 - "$OUT/wire.pcap" <<'PY'
import struct, sys
f = open(sys.argv[1], "rb"); f.read(24); n = 0
while True:
    h = f.read(16)
    if len(h) < 16: break
    d = f.read(struct.unpack("<IIII", h)[2])
    n += d[6:12] == bytes.fromhex("020000000010")
print(n)
PY
)
  [ "$sent" = 3 ] || fail "the device sent $sent frames, not its 3 answers"
}

case_unanswered() {
  start_wire
  sim link add wa type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 || { echo "FAIL: link add"; exit 1; }
  # ibv_rc_pingpong against a peer whose GID (10.0.0.98) nobody answers ARP
  # for: modify_qp to RTR fails once the provider's wait for the neighbour
  # (a second) is over; the tool reports it and exits.
  python3 "$HERE/wire_probe.py" peer "$TCP" ::ffff:10.0.0.98 &
  pids+=($!)
  # The peer listens before the client connects (a fixed sleep was too
  # short on a loaded machine).
  for _ in $(seq 100); do [ -n "$(ss -Hltn "sport = :$TCP")" ] && break; sleep 0.1; done
  local t0 t1 rc
  t0=$(date +%s%N)
  run timeout 30 ibv_rc_pingpong -g 1 -d wa -p "$TCP" 127.0.0.1 >"$OUT/client.out" 2>&1
  rc=$?
  t1=$(date +%s%N)
  cat "$OUT/client.out"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "ibv_rc_pingpong exited $rc (wanted a failure, not success or a hang)"
  grep -q "Failed to modify QP to RTR" "$OUT/client.out" || fail "no modify_qp error"
  [ $(((t1 - t0) / 1000000)) -lt 10000 ] || fail "the failure took $(((t1 - t0) / 1000000)) ms"
  echo "ibv_rc_pingpong failed after $(((t1 - t0) / 1000000)) ms"
  # rdma_cm's address query waits for the neighbour as the kernel's does:
  # rping to 10.0.0.99 (on wa's subnet, nobody there) gets ADDR_ERROR
  # (ETIMEDOUT) after its 2 s timeout, and no MAD leaves.
  t0=$(date +%s%N)
  run timeout 30 rping -c -a 10.0.0.99 -p "$TCP" -C 1 >"$OUT/rping.out" 2>&1
  rc=$?
  t1=$(date +%s%N)
  cat "$OUT/rping.out"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "rping exited $rc (wanted a failure, not success or a hang)"
  grep -q "RDMA_CM_EVENT_ADDR_ERROR" "$OUT/rping.out" || fail "rping saw no ADDR_ERROR"
  [ $(((t1 - t0) / 1000000)) -lt 6000 ] || fail "ADDR_ERROR took $(((t1 - t0) / 1000000)) ms"
  echo "rping failed after $(((t1 - t0) / 1000000)) ms"
  [ "$(stat_of wa tx_packets)" = 0 ] || fail "frames left for a peer nobody answered for: $(sim stats wa)"
  # The device is left as it was, and still answers for itself.
  for _ in $(seq 50); do sim resource show -j | grep -q '"qps":0[,}]' && break; sleep 0.1; done
  sim resource show -j | grep -q '"qps":0[,}]' || fail "QPs left behind: $(sim resource show -j)"
  python3 "$HERE/wire_probe.py" ask "$WIRE" --arp 10.0.0.10 | grep -q "arp 10.0.0.10 none" && fail "no longer answers ARP"
  sim link delete wa
  stop_wire
  # On the wire: broadcast requests for each unanswered address, a second
  # apart, three per attempt; no reply.
  python3 - "$OUT/wire.pcap" <<'PY' || fail "ARP on the wire is not what the kernel sends for an unanswered peer"
import struct, sys
f = open(sys.argv[1], "rb"); f.read(24); reqs = {}
while True:
    h = f.read(16)
    if len(h) < 16: break
    ts, us, n, _ = struct.unpack("<IIII", h); d = f.read(n)
    if d[12:14] != b"\x08\x06": continue
    op, tpa = struct.unpack(">H", d[20:22])[0], ".".join(map(str, d[38:42]))
    if op == 2 and tpa != "10.0.0.99": sys.exit(f"a reply for {tpa}")
    if op == 1 and d[0:6] == b"\xff" * 6 and d[28:32] == bytes([10, 0, 0, 10]):
        reqs.setdefault(tpa, []).append(ts + us / 1e6)
for ip in ("10.0.0.98", "10.0.0.99"):
    t = reqs.get(ip, [])
    gaps = [b - a for a, b in zip(t, t[1:])]
    print(f"ARP requests for {ip}: {len(t)}, gaps {['%.2f' % g for g in gaps]}")
    if len(t) < 3 or any(g < 0.9 or g > 1.5 for g in gaps[:2]): sys.exit(1)
PY
}

case_cli() {
  start_wire
  local err
  expect_err() {  # expect_err PATTERN ARGS...: link add fails saying PATTERN
    local pat=$1
    shift
    err=$(sim link add "$@" 2>&1) && { fail "link add $* succeeded"; sim link delete "$1" 2>/dev/null; return; }
    echo "$err" | grep -q -- "$pat" || fail "link add $*: '$err' does not say '$pat'"
  }
  expect_err "is not HOST:PORT" x0 type soft wire localhost:1 addr 10.0.0.10/24
  expect_err "is not HOST:PORT" x0 type soft wire "127.0.0.1:0" addr 10.0.0.10/24
  expect_err "needs its IPv4 address" x0 type soft wire "127.0.0.1:$WIRE"
  expect_err "needs its IPv4 address" x0 type soft wire "127.0.0.1:$WIRE" addr fd00::1/64
  expect_err "is not an address with its prefix length" x0 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10
  expect_err "is not an address with its prefix length" x0 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.300/24
  expect_err "is not a unicast address" x0 type soft wire "127.0.0.1:$WIRE" addr 224.0.0.1/24
  expect_err "one IPv4 address" x0 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 addr 10.0.0.11/24
  expect_err "is not a unicast address" x0 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 mac 01:00:5e:00:00:01
  expect_err "is not a MAC address" x0 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 mac 02:00:00
  expect_err "is not an MTU" x0 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 mtu 100
  expect_err "one of 'netdev' or 'wire'" x0 type soft netdev lo wire "127.0.0.1:$WIRE" addr 10.0.0.10/24
  expect_err "applies to a device on a wire" x0 type soft netdev lo addr 10.0.0.10/24
  expect_err "always short-cuts" x0 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 loopback off
  # Nothing listening there: said at once.
  local dead
  dead=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  expect_err "nothing listens on the wire 127.0.0.1:$dead" x0 type soft wire "127.0.0.1:$dead" addr 10.0.0.10/24
  # Several devices on one wire, each with its own addresses and MAC; an
  # address or a MAC taken is refused.
  sim link add w1 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.1/24 || fail "link add w1"
  sim link add w2 type "$TYPE_B" wire "127.0.0.1:$WIRE" addr 10.0.0.2/24 addr fd00::2/64 mtu 9000 ||
    fail "link add w2"
  expect_err "is already device w1's" x3 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.1/24
  expect_err "is already device w2's" x3 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.3/24 addr fd00::2/64
  local m1
  m1=$(sim link show -j w1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["mac"])')
  expect_err "MAC $m1 is already device w1's" x3 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.3/24 mac "$m1"
  sim link show >"$OUT/show.out"
  cat "$OUT/show.out"
  grep -Eq "^link w1/1 state ACTIVE physical_state LINK_UP wire 127.0.0.1:$WIRE mac ([0-9a-f]{2}:){5}[0-9a-f]{2} mtu 1500 addr 10.0.0.1/24 addr fe80::" "$OUT/show.out" ||
    fail "link show w1"
  grep -q "^link w2/1 .* mtu 9000 addr 10.0.0.2/24 addr fe80::[0-9a-f:]*/64 addr fd00::2/64$" "$OUT/show.out" || fail "link show w2"
  # The MAC is the same for the same name, run after run, and locally
  # administered unicast.
  sim link delete w1
  sim link add w1 type soft wire "127.0.0.1:$WIRE" addr 10.0.0.1/24 || fail "link add w1 again"
  [ "$(sim link show -j w1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["mac"])')" = "$m1" ] ||
    fail "w1's MAC changed"
  [ $((0x${m1:0:2} & 3)) -eq 2 ] || fail "w1's MAC $m1 is not locally administered unicast"
  # An active MTU from the wire's MTU, as rxe's rule says (9000 -> 4096).
  run ibv_devinfo -d w2 | grep -q "active_mtu:.*4096" || fail "w2's active MTU is not 4096"
  sim link delete w1; sim link delete w2
  stop_wire
}

"case_$CASE"
if [ "$failures" -ne 0 ]; then
  for f in server client; do [ -f "$OUT/$f.out" ] && { echo "--- $f:"; cat "$OUT/$f.out"; }; done
  echo "wire $CASE: $failures checks failed"
  exit 1
fi
echo "wire $CASE: passed"
