#!/usr/bin/env bash
# Kernel Soft-RoCE in two VMs, talking across a wire that simnic can join:
# boots the rig, shows rxe0 in a VM, runs ibv_rc_pingpong between the VMs,
# then decodes the wire's capture with simnic pcap. Runs scripts/setup.sh and
# builds simnic first when `simnic` is not on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
rig=testbench/rig/simnic-rig
export SIMNIC_RIG_STATE=${SIMNIC_RIG_STATE:-/tmp/simnic-rig-demo-$(id -u)}

# The rig's wire is `simnic wire`: the rig finds simnic through $SIMNIC.
if command -v simnic >/dev/null; then
  SIMNIC=$(command -v simnic)
else
  ./scripts/setup.sh
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build --target simnic
  SIMNIC=$PWD/build/cli/simnic
fi
export SIMNIC

step() { printf '\n\033[1m== %s\033[0m\n' "$1"; }

step "Fetch the Debian kernel and build the VM image (cached after the first run)"
"$rig" setup

step "Boot two VMs with rxe0 on a shared wire (TCG; about 15 s)"
trap '"$rig" stop >/dev/null 2>&1 || true' EXIT
"$rig" start --vms 2 --lifetime 600

step "Inside vm0: rdma link show; ibv_devinfo -d rxe0"
"$rig" exec 0 "rdma link show; ibv_devinfo -d rxe0"

step "ibv_rc_pingpong -g 1 between vm0 (server, 10.0.0.1) and vm1 (client)"
"$rig" exec --timeout 60 0 "ibv_rc_pingpong -g 1 -n 20 -s 3000" > "$SIMNIC_RIG_STATE/server.out" 2>&1 &
server=$!
sleep 2
"$rig" exec --timeout 60 1 "ibv_rc_pingpong -g 1 -n 20 -s 3000 10.0.0.1"
wait "$server"

step "The wire's capture, decoded by simnic (first 12 RoCE packets)"
pcap=$("$rig" pcap)
"$SIMNIC" pcap "$pcap" | grep -v "^#" | head -12
"$SIMNIC" pcap "$pcap" | tail -1
printf '\nThe wire is UDP 127.0.0.1:%s; `%s --help` says how a host process joins it.\n' \
  "$("$rig" status | python3 -c 'import json,sys; print(json.load(sys.stdin)["wire"]["port"])')" "$rig"
