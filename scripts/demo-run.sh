#!/usr/bin/env bash
# The demo itself (scripts/demo.sh builds and installs first): the packet
# core and the RTL ICRC engine on a synthetic RC/UC/UD conversation, then a
# soft device on lo with the tutorial's tools against it.
# No pipefail: the demo pipes long outputs into head and grep -m, which
# close the pipe early on purpose.
set -eu
SIMNIC=${SIMNIC:-simnic}
work=$(mktemp -d /tmp/simnic-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT

step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "$2"; }

step "1. The packet core writes a capture: RC SEND/WRITE/READ/atomics, NAKs, UC, UD" \
     "simnic synth demo.pcap"
"$SIMNIC" synth "$work/demo.pcap"

step "2. simnic decodes every packet and checks its ICRC" "simnic pcap demo.pcap"
"$SIMNIC" pcap "$work/demo.pcap"

step "3. Every field of one packet (the first RDMA WRITE)" "simnic pcap -v demo.pcap | grep -A7 RC_RDMA_WRITE_FIRST"
"$SIMNIC" pcap -v "$work/demo.pcap" | grep -m1 -A7 RC_RDMA_WRITE_FIRST

step "4. Wireshark's dissector reads the same frames as InfiniBand over UDP 4791" \
     "tshark -r demo.pcap -d udp.port==4791,infiniband"
tshark -r "$work/demo.pcap" -d udp.port==4791,infiniband 2>/dev/null | head -12
echo "   ..."

step "5. A capture with every 5th packet corrupted: the ICRC check catches each one" \
     "simnic synth bad.pcap --corrupt-every 5; simnic pcap bad.pcap | grep BAD"
"$SIMNIC" synth "$work/bad.pcap" --corrupt-every 5 >/dev/null
"$SIMNIC" pcap "$work/bad.pcap" | grep -E "BAD|^#"

step "6. The Verilated RTL ICRC engine (512-bit beats) on the same frames, against the C++ core" \
     "simnic rtl icrc -v bad.pcap"
"$SIMNIC" rtl icrc -v "$work/bad.pcap" | tail -12

# A soft device, and the tutorial's tools against it: unmodified Debian
# binaries, loaded with simnic's verbs provider by `simnic exec`.
export SIMNIC_RUNTIME_DIR=$work/run
dev=demo_lo
cleanup_dev() {
  "$SIMNIC" link delete "$dev" >/dev/null 2>&1 || true
  "$SIMNIC" daemon --stop >/dev/null 2>&1 || true
}
trap 'cleanup_dev; rm -rf "$work"' EXIT

step "7. A soft device bound to lo, as the tutorial's rdma link add does with rxe" \
     "simnic link add $dev type soft netdev lo; simnic link show"
"$SIMNIC" link add "$dev" type soft netdev lo
"$SIMNIC" link show

step "8. Unmodified ibv_devices and ibv_devinfo see it" "simnic exec -- ibv_devinfo -d $dev"
"$SIMNIC" exec -- ibv_devices
"$SIMNIC" exec -- ibv_devinfo -d "$dev"

step "9. ibv_rc_pingpong between two processes on the device, captured on lo" \
     "simnic exec -- ibv_rc_pingpong -g 1 -d $dev [127.0.0.1]"
cap=$work/lo.pcap
tcpdump -i lo -w "$cap" -c 200 udp port 4791 >/dev/null 2>"$cap.err" &
tcpdump_pid=$!
# What is sent before tcpdump says it listens is not in the capture.
for _ in $(seq 100); do grep -q "listening on" "$cap.err" && break; sleep 0.1; done
"$SIMNIC" exec -- ibv_rc_pingpong -g 1 -d "$dev" -n 100 >/dev/null 2>&1 &
server=$!
sleep 1
"$SIMNIC" exec -- ibv_rc_pingpong -g 1 -d "$dev" -n 100 127.0.0.1
wait "$server" || true
sleep 0.5
kill "$tcpdump_pid" 2>/dev/null || true
wait "$tcpdump_pid" 2>/dev/null || true

step "10. The wire, decoded: every frame the device sent on lo, with its ICRC verdict" "simnic pcap lo.pcap"
"$SIMNIC" pcap "$cap" | head -8
"$SIMNIC" pcap "$cap" | tail -1

step "11. perftest: ib_write_bw with 64 KiB messages" "simnic exec -- ib_write_bw -d $dev --report_gbits [127.0.0.1]"
"$SIMNIC" exec -- ib_write_bw -d "$dev" -F --report_gbits -n 2000 >/dev/null 2>&1 &
server=$!
sleep 1
"$SIMNIC" exec -- ib_write_bw -d "$dev" -F --report_gbits -n 2000 127.0.0.1 | grep -A2 "#bytes"
wait "$server" || true

step "12. What the device holds and counts" "simnic resource show; simnic stats $dev"
"$SIMNIC" resource show
"$SIMNIC" stats "$dev" | grep -E "packets|bytes|retransmits|icrc"
cleanup_dev

# The same tools against a model device: the cycle-level pipeline.
mdev=simnic_model
step "13. A model device (the cycle-level pipeline) on lo, and rc_pingpong against it" \
  "simnic link add $mdev type model netdev lo; simnic exec -- ibv_rc_pingpong -d $mdev -g 1 [127.0.0.1]"
"$SIMNIC" link add "$mdev" type model netdev lo
"$SIMNIC" exec -- ibv_rc_pingpong -d "$mdev" -g 1 -n 1000 >/dev/null 2>&1 &
server=$!
sleep 1
"$SIMNIC" exec -- ibv_rc_pingpong -d "$mdev" -g 1 -n 1000 127.0.0.1 | tail -2
wait "$server" || true

step "14. What the model saw, in simulated time" "simnic stats $mdev"
"$SIMNIC" stats "$mdev" | sed -n '/model (simulated time)/,$p' |
  grep -E "model|sim\.|block\.(parser|requester|responder)\.util|cache\.qpc\.hit_rate|dma\.read_latency_avg|latency\.(min|median|p99)|mac\.tx_"
"$SIMNIC" link delete "$mdev"

step "15. simnic bench: the model without applications" "simnic bench --op write --size 65536"
"$SIMNIC" bench --op write --size 65536

printf '\nDone. Next: simnic pcap on your own captures (tcpdump -i lo -w x.pcap udp port 4791).\n'
