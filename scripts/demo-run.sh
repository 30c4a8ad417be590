#!/usr/bin/env bash
# The demo itself (scripts/demo.sh builds and installs first). Until the
# devices exist, it shows the packet core and the RTL ICRC engine at work on
# a synthetic RC/UC/UD conversation.
set -euo pipefail
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

printf '\nDone. Next: simnic pcap on your own captures (tcpdump -i lo -w x.pcap udp port 4791).\n'
