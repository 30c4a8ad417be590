#!/usr/bin/env bash
# Two soft devices in two network namespaces joined by a veth pair, as two
# hosts with an rxe device each: ibv_rc_pingpong and ib_write_bw across them,
# then ibv_rc_pingpong over the link-local IPv6 GIDs (index 0), then mckey's
# UD multicast from b to a group a joined, IPv4 (239.1.2.3) and IPv6
# (ff0e::1:2:3, from the veths' unique local addresses), then the other
# rdmacm-utils tools (rping, ucmatose, udaddy, rdma_server/rdma_client,
# rdma_xserver/rdma_xclient, cmtime, rstream, riostream, rcopy), with tcpdump
# on the wire showing RoCE v2 that simnic's packet core decodes
# with valid ICRCs. Needs root (network namespaces); CI runs as root.
#   test_netns.sh SIMNIC LIBSIMNIC_VERBS
set -u
SIMNIC=$1 LIB=$2
if [ "$(id -u)" -ne 0 ]; then
  echo "FAIL: this test creates network namespaces and needs root"
  exit 1
fi
tag=$$
nsa=simnic-a-$tag nsb=simnic-b-$tag
. "$(dirname "$0")/lib.sh"
sys_init --as-caller netns
in_a() { ip netns exec "$nsa" env SIMNIC_RUNTIME_DIR="$work/rt-a" SIMNIC_VERBS_LIB="$LIB" "$@"; }
in_b() { ip netns exec "$nsb" env SIMNIC_RUNTIME_DIR="$work/rt-b" SIMNIC_VERBS_LIB="$LIB" "$@"; }
cleanup() {
  [ -n "${dump_pid:-}" ] && kill "$dump_pid" 2>/dev/null
  in_a "$SIMNIC" daemon --stop >/dev/null 2>&1
  in_b "$SIMNIC" daemon --stop >/dev/null 2>&1
  ip netns del "$nsa" 2>/dev/null
  ip netns del "$nsb" 2>/dev/null
  sys_cleanup
}
trap cleanup EXIT

ip netns add "$nsa" && ip netns add "$nsb" || { echo "FAIL: ip netns add"; exit 1; }
ip link add "va$tag" type veth peer name "vb$tag" || { echo "FAIL: veth"; exit 1; }
ip link set "va$tag" netns "$nsa"; ip link set "vb$tag" netns "$nsb"
ip -n "$nsa" addr add 10.201.0.1/24 dev "va$tag"; ip -n "$nsb" addr add 10.201.0.2/24 dev "vb$tag"
# Unique local IPv6 addresses for the IPv6 multicast case (no duplicate
# address detection: the device binds them at once).
ip -n "$nsa" addr add fd00:201::1/64 dev "va$tag" nodad; ip -n "$nsb" addr add fd00:201::2/64 dev "vb$tag" nodad
for ns in "$nsa" "$nsb"; do ip -n "$ns" link set lo up; done
ip -n "$nsa" link set "va$tag" up; ip -n "$nsb" link set "vb$tag" up

in_a "$SIMNIC" link add dev_a type "${SIMNIC_DEVICE_TYPE:-soft}" netdev "va$tag" || fail "link add in $nsa"
in_b "$SIMNIC" link add dev_b type "${SIMNIC_DEVICE_TYPE:-soft}" netdev "vb$tag" || fail "link add in $nsb"
out=$(in_a "$SIMNIC" link show)
[[ "$out" == "link dev_a/1 state ACTIVE physical_state LINK_UP netdev va$tag" ]] || fail "link show: $out"

capture_start "$work/wire.pcap" ip netns exec "$nsa" tcpdump -i "va$tag" udp port 4791

# pair TOOL ARGS...: server on dev_a in namespace a, client on dev_b in b.
pair() {
  local tool=$1; shift
  in_a timeout 60 "$SIMNIC" exec -- "$tool" -d dev_a "$@" >"$work/server.out" 2>&1 &
  local server=$!
  wait_listen 18515 "$server" "$nsa"
  in_b timeout 60 "$SIMNIC" exec -- "$tool" -d dev_b "$@" 10.201.0.1 >"$work/client.out" 2>&1 ||
    fail "$tool client: $(cat "$work/client.out")"
  wait "$server" || fail "$tool server: $(cat "$work/server.out")"
}
pair ibv_rc_pingpong -g 1 -n 200
grep -Eq '200 iters in' "$work/client.out" || fail "ibv_rc_pingpong report: $(cat "$work/client.out")"
pair ib_write_bw -F -n 200
grep -Eq '^ *65536 +200 ' "$work/client.out" || fail "ib_write_bw report: $(cat "$work/client.out")"

# GID index 0 is the link-local IPv6 address the kernel derives from the MAC
# (EUI-64), as rxe's is: RoCE v2 over IPv6 across the link, which needs the
# interface's scope. Wait for duplicate address detection first, as a real
# host would (the QP exchange itself goes over TCP on IPv4).
for ns in "$nsa" "$nsb"; do
  for _ in $(seq 100); do
    ip -n "$ns" -6 addr show scope link | grep -q 'inet6 fe80' &&
      ! ip -n "$ns" -6 addr show scope link | grep -q tentative && break
    sleep 0.1
  done
done
ll_a=$(ip -n "$nsa" -6 addr show dev "va$tag" scope link | sed -n 's/.*inet6 \(fe80[^/]*\).*/\1/p')
gid0=$(in_a "$SIMNIC" resource show gid | awk '$4 == 0 {print $6}')
[ -n "$ll_a" ] && [ "$gid0" == "$ll_a" ] || fail "GID 0 of dev_a is '$gid0', the link-local address is '$ll_a'"
pair ibv_rc_pingpong -g 0 -n 200
grep -Eq '200 iters in' "$work/client.out" || fail "ibv_rc_pingpong -g 0 report: $(cat "$work/client.out")"

# UD multicast through rdma_cm across the link (mckey, unmodified): the
# receiver's QP on dev_a attached to 239.1.2.3 has namespace a's kernel join
# the group on the veth (IGMP); the sender on dev_b sends its 10 messages to
# the group address and multicast MAC, and the receiver gets every one.
in_a timeout 60 "$SIMNIC" exec -- stdbuf -oL mckey -m 239.1.2.3 -b 10.201.0.1 >"$work/mc_recv.out" 2>&1 &
mc_recv=$!
for _ in $(seq 100); do
  grep -q '^mckey: joined dgid: ::ffff:239.1.2.3' "$work/mc_recv.out" && break
  sleep 0.1
done
ip -n "$nsa" maddr show dev "va$tag" | grep -q 'inet  *239.1.2.3$' ||
  fail "va$tag is not in 239.1.2.3 while a QP is attached: $(ip -n "$nsa" maddr show dev "va$tag")"
in_b timeout 60 "$SIMNIC" exec -- mckey -m 239.1.2.3 -s -b 10.201.0.2 >"$work/mc_send.out" 2>&1 ||
  fail "mckey sender: $(cat "$work/mc_send.out")"
wait "$mc_recv" || fail "mckey receiver: $(cat "$work/mc_recv.out")"
grep -q '^data transfers complete' "$work/mc_recv.out" || fail "mckey receiver report: $(cat "$work/mc_recv.out")"

# The same with an IPv6 group: the receiver's QP attached to ff0e::1:2:3 has
# dev_a's port join it on the veth (MLD: `ip -6 maddr`), the sender's 10
# messages go to the group over IPv6 with the group's MAC (33:33 and its low
# 32 bits), and the membership goes with the receiver's last QP.
GROUP6=ff0e::1:2:3
in_group6() { ip -n "$nsa" -6 maddr show dev "va$tag" | grep -q "inet6  *$GROUP6\$"; }
in_group6 && fail "va$tag is in $GROUP6 before anyone joined"
in_a timeout 60 "$SIMNIC" exec -- stdbuf -oL mckey -m "$GROUP6" -b fd00:201::1 >"$work/mc6_recv.out" 2>&1 &
mc_recv=$!
for _ in $(seq 100); do
  grep -q "^mckey: joined dgid: $GROUP6 " "$work/mc6_recv.out" && break
  sleep 0.1
done
grep -q "^mckey: joined dgid: $GROUP6 mlid 0x0 sl 0" "$work/mc6_recv.out" ||
  fail "IPv6 receiver's join event: $(cat "$work/mc6_recv.out")"
in_group6 || fail "va$tag is not in $GROUP6 while a QP is attached: $(ip -n "$nsa" -6 maddr show dev "va$tag")"
in_b timeout 60 "$SIMNIC" exec -- mckey -m "$GROUP6" -s -b fd00:201::2 >"$work/mc6_send.out" 2>&1 ||
  fail "IPv6 mckey sender: $(cat "$work/mc6_send.out")"
wait "$mc_recv" || fail "IPv6 mckey receiver: $(cat "$work/mc6_recv.out")"
grep -q '^data transfers complete' "$work/mc6_recv.out" || fail "IPv6 mckey receiver report: $(cat "$work/mc6_recv.out")"
for _ in $(seq 50); do
  in_group6 || break
  sleep 0.1
done
in_group6 && fail "va$tag still in $GROUP6 after its last QP left: $(ip -n "$nsa" -6 maddr show dev "va$tag")"

# The rdmacm-utils tools across the link, as test_rdmacm_tools.sh runs them
# on one host: the server on dev_a, bound to namespace a's address (or to
# any), the client on dev_b; each end's report checked.
#   cm_tool NAME READY STAYS EXPECT SERVER_ARGS... -- CLIENT_ARGS...
# READY: port:N (an rdma_cm ID of the server LISTENs on N, by the daemon of
# namespace a) or a pattern the server prints once it listens (rsockets);
# STAYS 1: the server serves until it is stopped; EXPECT: a pattern the
# client's report holds.
cm_tool() {
  local name=$1 ready=$2 stays=$3 expect=$4 srv=() cli=() a seen=0 server
  shift 4
  for a in "$@"; do
    if [ "$a" = -- ]; then seen=1; elif [ $seen -eq 0 ]; then srv+=("$a"); else cli+=("$a"); fi
  done
  in_a timeout 60 "$SIMNIC" exec -- stdbuf -oL "${srv[@]}" >"$work/$name.server" 2>&1 &
  server=$!
  for _ in $(seq 100); do
    if [[ "$ready" == port:* ]]; then
      in_a "$SIMNIC" resource show cm_id 2>/dev/null | grep -Eq " state LISTEN .* src-addr [^ ]*:${ready#port:}( |$)" && break
    else
      grep -Eq -- "$ready" "$work/$name.server" && break
    fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  in_b timeout 60 "$SIMNIC" exec -- "${cli[@]}" >"$work/$name.client" 2>&1 ||
    fail "$name client: $(cat "$work/$name.client") / server: $(cat "$work/$name.server")"
  grep -Eq -- "$expect" "$work/$name.client" || fail "$name client report lacks /$expect/: $(cat "$work/$name.client")"
  if [ "$stays" -eq 1 ]; then
    kill -0 "$server" 2>/dev/null || fail "$name server exited before it was stopped: $(cat "$work/$name.server")"
    # $server is the subshell that runs in_a; its child (ip netns exec, env,
    # then timeout, each exec'ing the next) passes SIGTERM on to the tool.
    pkill -TERM -P "$server"
    wait "$server" 2>/dev/null
    # Its IDs go when the daemon sees its connection close, a moment later
    # (the kernel's go with the process's last file): the next server binds
    # the same port.
    for _ in $(seq 50); do
      [ -z "$(in_a "$SIMNIC" resource show cm_id 2>&1)" ] && break
      sleep 0.1
    done
  else
    wait "$server" || fail "$name server: $(cat "$work/$name.server")"
  fi
}
A=10.201.0.1
cm_tool rping port:7174 0 '^ping data: rdma-ping-9: ' rping -s -a $A -C 10 -- rping -c -a $A -C 10 -v
cm_tool ucmatose port:7471 0 '^return status 0' ucmatose -b $A -c 2 -C 10 -- ucmatose -s $A -c 2 -C 10
cm_tool udaddy port:7174 0 '^return status 0' udaddy -b $A -c 2 -C 10 -- udaddy -s $A -c 2 -C 10
cm_tool rdma_server port:7471 0 'rdma_client: end 0' rdma_server -s $A -- rdma_client -s $A
cm_tool rdma_xserver port:7471 0 'rdma_xclient: end 0' rdma_xserver -- rdma_xclient -s $A
cm_tool cmtime port:7471 1 '^disconnect *:' cmtime -b $A -- cmtime -s $A -c 20
cm_tool rstream '^name ' 0 '^custom +64k +50 +1 ' rstream -b $A -T v -S 65536 -C 50 -- rstream -s $A -T v -S 65536 -C 50
cm_tool riostream '^name ' 0 '^custom +64k +20 +2 ' riostream -b $A -T v -S 65536 -C 20 -I 2 -- \
  riostream -s $A -T v -S 65536 -C 20 -I 2
head -c 1048583 /dev/urandom >"$work/src.bin"
cm_tool rcopy 'waiting for connection' 1 '^1048583 bytes in ' rcopy -- rcopy "$work/src.bin" "$A:$work/dst.bin"
cmp -s "$work/src.bin" "$work/dst.bin" || fail "rcopy's copy across the link differs from its source"

sleep 1
capture_stop
report=$("$SIMNIC" pcap --strict "$work/wire.pcap")
rc=$?
summary=$(tail -1 <<<"$report")
[ "$rc" -eq 0 ] || fail "simnic pcap --strict on the wire: $summary"
n=$(sed -n 's/^# [0-9]* packets: \([0-9]*\) RoCE v2 ok.*/\1/p' <<<"$summary")
[ "${n:-0}" -gt 400 ] || fail "too few RoCE frames on the wire: $summary"
grep -q "RC_RDMA_WRITE_FIRST" <<<"$report" || fail "no RDMA WRITE on the wire"
grep -q "RC_SEND_ONLY\|RC_SEND_FIRST" <<<"$report" || fail "no SEND on the wire"
grep -q "10.201.0.2:[0-9]* > 10.201.0.1:4791" <<<"$report" || fail "no frames from b to a"
grep -q "fe80::[0-9a-f:]*:[0-9]* > $ll_a:4791 " <<<"$report" || fail "no link-local IPv6 frames from b to a"
[ "$(grep -c "10.201.0.2:[0-9]* > 239.1.2.3:4791 UD_SEND_ONLY_WITH_IMMEDIATE QP=0xffffff .* qkey=0x1234567 " <<<"$report")" -eq 10 ] ||
  fail "not 10 multicast SENDs from b to 239.1.2.3: $(grep 239.1.2.3 <<<"$report")"
[ "$(grep -c "fd00:201::2:[0-9]* > $GROUP6:4791 UD_SEND_ONLY_WITH_IMMEDIATE QP=0xffffff .* qkey=0x1234567 " <<<"$report")" -eq 10 ] ||
  fail "not 10 multicast SENDs from b to $GROUP6: $(grep "$GROUP6" <<<"$report")"
n6=$(tcpdump -nn -e -r "$work/wire.pcap" "ip6 dst $GROUP6" 2>/dev/null | grep -c "> 33:33:00:02:00:03, ethertype IPv6")
[ "$n6" -eq 10 ] || fail "not 10 frames to $GROUP6's MAC 33:33:00:02:00:03: $n6"

echo "netns: $summary"
sys_finish netns
