#!/usr/bin/env bash
# `simnic doctor` (issue 16) against each problem of the tutorial's
# troubleshooting chains (its chapter 6), made to happen: no daemon, a daemon
# that died, no such device, a netdev down and one without an address (a
# veth pair), UDP 4791 dropped on the real path (the tutorial's
# iptables rule, an nftables one, a blackhole policy rule),
# objects left by a killed process, a wrong GID index, a peer's firewall
# and a peer without a device (--peer), and a doctor started
# with and without simnic exec. Where the tutorial names the symptom an
# application shows for the cause, the application shows it here too.
#
# The whole test runs in a network namespace of its own (and a user
# namespace when not root), so that its filters and interfaces touch nothing
# else.
#   test_doctor.sh CASE SIMNIC LIBSIMNIC_VERBS DOCTOR_ORPHAN
# CASE is one chain (the case_* functions below); each runs alone, in a
# network namespace of its own.
set -u
. "$(dirname "$0")/lib.sh"
own_netns "$@"
CASE=$1 SIMNIC=$2 LIB=$3 ORPHAN=$4
sys_init --as-caller doctor
ip link set lo up

cleanup() {
  [ -n "${holder:-}" ] && kill "$holder" 2>/dev/null
  if [ -n "${peer_ns:-}" ]; then
    ip netns exec "$peer_ns" env SIMNIC_RUNTIME_DIR="$work/rt-peer" "$SIMNIC" daemon --stop >/dev/null 2>&1
    ip netns del "$peer_ns" 2>/dev/null
  fi
  "$SIMNIC" daemon --stop >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# doctor ARGS...: runs simnic doctor; $out its output, $rc its status.
doctor() { out=$("$SIMNIC" doctor "$@" 2>&1); rc=$?; }
# has STATUS ID[ DEVICE] PATTERN: a line of $out says it, e.g.
#   has FAIL "netdev d0dev" "is DOWN"
has() {
  local st=$1 label=$2 pat=$3 line
  line=$(grep -E "^$st +$label +" <<<"$out")
  [ -n "$line" ] && [[ "$line" =~ $pat ]] || fail "expected '$st $label ... /$pat/' in:"$'\n'"$out"
}
lo_device() { "$SIMNIC" link add rxe_lo type soft netdev lo || { echo "FAIL: link add rxe_lo"; exit 1; }; }
status_is() { [ "$rc" -eq "$1" ] || fail "doctor exited $rc, expected $1:"$'\n'"$out"; }

# no_daemon: No daemon (tutorial 2.4: nothing to talk to)
case_no_daemon() {
  doctor
  status_is 1
  has OK runtime_dir "$SIMNIC_RUNTIME_DIR"
  has FAIL daemon "no simnic daemon is running"
  grep -q 'fix: simnic link add rxe_lo type soft netdev lo' <<<"$out" || fail "no fix for a missing daemon: $out"
  has SKIP device "no daemon"
  # `simnic daemon --status` starts none either.
  st=$("$SIMNIC" daemon --status 2>&1) && fail "daemon --status succeeded with no daemon: $st"
  grep -q "no simnic daemon is running" <<<"$st" || fail "daemon --status with no daemon said: $st"
  doctor --json
  status_is 1
  printf '%s' "$out" >"$work/doctor.json"
  python3 - "$work/doctor.json" <<'EOF' || fail "--json: $out"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False
c = [x for x in d["checks"] if x["check"] == "daemon"][0]
assert c["status"] == "FAIL" and "fix" in c, c
EOF
}

# healthy: A healthy device on lo
case_healthy() {
  lo_device
  doctor rxe_lo
  status_is 0
  has OK daemon "pid [0-9]+ answers \(.*\), heap [0-9]+\.[0-9] MiB in use of [0-9]+\.[0-9] MiB held"
  has OK "device rxe_lo" "type soft, on netdev lo"
  has OK "port rxe_lo" "state ACTIVE"
  has OK "netdev rxe_lo" "lo is UP"
  has OK "address rxe_lo" "127.0.0.1"
  has OK "mtu rxe_lo" "MTU 65536 gives active_mtu 4096"
  has OK "gid rxe_lo" "RoCE v2 over IPv4 is index 1 \(::ffff:127.0.0.1\)"
  has OK "udp4791 rxe_lo" "reaches rxe_lo"
  has OK "stale rxe_lo" "belongs to a running process"
  has OK ptrace ""
  # The same answer ibv_devinfo gives for active_mtu.
  "$SIMNIC" exec -- ibv_devinfo -d rxe_lo | grep -Eq 'active_mtu:\s+4096' || fail "ibv_devinfo's active_mtu is not 4096"
  # The daemon's figures, one per line, for scripts (the soak samples them):
  # the device's tables are live allocations of the daemon's heap, and go
  # with the device.
  heap_status() { "$SIMNIC" daemon --status | awk -v k="$1" '$1 == k {print $2}'; }
  [ "$(heap_status pid)" = "$(daemon_pid)" ] || fail "daemon --status: $("$SIMNIC" daemon --status)"
  local used held
  used=$(heap_status heap_in_use) held=$(heap_status heap_held)
  [ "${used:-0}" -gt 0 ] && [ "$held" -ge "$used" ] || fail "daemon --status: heap_in_use '$used', heap_held '$held'"
  "$SIMNIC" link delete rxe_lo || fail "link delete rxe_lo"
  [ "$(heap_status heap_in_use)" -lt "$used" ] || fail "deleting the device left heap_in_use at $used or more"
}

# exec: With and without simnic exec
case_exec() {
  lo_device
  doctor rxe_lo
  status_is 0
  has NOTE exec "not started under simnic exec: a program started this way sees no simnic device"
  out=$("$SIMNIC" exec -- "$SIMNIC" doctor rxe_lo 2>&1); rc=$?
  status_is 0
  has OK exec "runs under simnic exec"
  # The symptom the note names: without simnic exec there is no simnic device.
  apps=$(ibv_devices 2>&1)
  grep -q rxe_lo <<<"$apps" && fail "ibv_devices without simnic exec lists rxe_lo: $apps"
  "$SIMNIC" exec -- ibv_devices | grep -q rxe_lo || fail "ibv_devices under simnic exec does not list rxe_lo"
}

# no_device: No such device
case_no_device() {
  lo_device
  doctor nosuch
  status_is 1
  has FAIL "device nosuch" "no simnic device nosuch \(devices: rxe_lo\)"
}

# wrong_gid: A wrong GID index (tutorial 3.3): the QP cannot reach RTR
case_wrong_gid() {
  lo_device
  port=$(free_port)
  timeout 20 "$SIMNIC" exec -- ibv_rc_pingpong -d rxe_lo -g 7 -p "$port" >"$work/srv7" 2>&1 &
  srv=$!
  wait_listen "$port" "$srv"
  timeout 20 "$SIMNIC" exec -- ibv_rc_pingpong -d rxe_lo -g 7 -p "$port" 127.0.0.1 >"$work/cli7" 2>&1 &&
    fail "ibv_rc_pingpong -g 7 worked: $(cat "$work/cli7")"
  wait "$srv" 2>/dev/null && fail "the server with -g 7 worked"
  grep -q 'Failed to modify QP to RTR' "$work/srv7" || fail "ibv_rc_pingpong -g 7 (server) says: $(cat "$work/srv7")"
  doctor rxe_lo
  has OK "gid rxe_lo" "ibv_rc_pingpong -g 1"
}

# firewall: UDP 4791 dropped (tutorial 6.4, step 2)
case_firewall() {
  lo_device
  # 6a. The tutorial's cause: a firewall rule that drops UDP 4791 on INPUT.
  if command -v iptables >/dev/null; then
    iptables -I INPUT -p udp --dport 4791 -j DROP || fail "iptables rule"
    doctor rxe_lo --probe-timeout 500
    status_is 1
    has FAIL "udp4791 rxe_lo" "never reached rxe_lo: something drops UDP 4791"
    grep -q 'iptables -I INPUT -p udp --dport 4791 -j ACCEPT' <<<"$out" || fail "no firewall fix: $out"
    # The symptom (tutorial 6.4): the pingpong hangs. Its QPs retry for ever
    # (retry_cnt 7 means that to rxe, and to simnic), so the client is still
    # waiting when its timeout ends it, and the device counts the timeouts.
    port=$(free_port)
    timeout 15 "$SIMNIC" exec -- ibv_rc_pingpong -d rxe_lo -g 1 -n 5 -p "$port" >"$work/srvd" 2>&1 &
    srv=$!
    wait_listen "$port" "$srv"
    timeout 3 "$SIMNIC" exec -- ibv_rc_pingpong -d rxe_lo -g 1 -n 5 -p "$port" 127.0.0.1 >"$work/clid" 2>&1
    [ $? -eq 124 ] || fail "ibv_rc_pingpong did not hang behind the drop: $(cat "$work/clid")"
    kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
    "$SIMNIC" stats rxe_lo | grep -Eq 'timeouts +[1-9]' || fail "no timeouts counted: $("$SIMNIC" stats rxe_lo)"
    # perftest hangs the same way; rping's connection request is never
    # answered, and it waits for the CM's timeouts.
    port=$(free_port)
    timeout 15 "$SIMNIC" exec -- ib_write_bw -d rxe_lo -n 5 -p "$port" >"$work/srvbw" 2>&1 &
    srv=$!
    wait_listen "$port" "$srv"
    timeout 3 "$SIMNIC" exec -- ib_write_bw -d rxe_lo -n 5 -p "$port" 127.0.0.1 >"$work/clibw" 2>&1
    [ $? -eq 124 ] || fail "ib_write_bw did not hang behind the drop: $(cat "$work/clibw")"
    kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
    port=$(free_port)
    timeout 15 "$SIMNIC" exec -- rping -s -a 127.0.0.1 -p "$port" -C 1 >"$work/srvrp" 2>&1 &
    srv=$!
    sleep 1
    timeout 3 "$SIMNIC" exec -- rping -c -a 127.0.0.1 -p "$port" -C 1 -v >"$work/clirp" 2>&1
    [ $? -eq 124 ] || fail "rping did not hang behind the drop: $(cat "$work/clirp")"
    kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
    # The tutorial's fix, in front of the DROP.
    iptables -I INPUT -p udp --dport 4791 -j ACCEPT
    doctor rxe_lo
    has OK "udp4791 rxe_lo" "reaches rxe_lo"
    iptables -F INPUT
  else
    echo "note: iptables not installed (scripts/setup.sh installs it): the firewall rule case did not run"
  fi

  # 6b. The tutorial's own cause, a firewall rule, when nftables is installed.
  if command -v nft >/dev/null; then
    nft add table inet simnic_doctor &&
      nft add chain inet simnic_doctor input '{ type filter hook input priority 0; }' &&
      nft add rule inet simnic_doctor input udp dport 4791 drop || fail "nft rule"
    doctor rxe_lo --probe-timeout 500
    has FAIL "udp4791 rxe_lo" "never reached"
    nft delete table inet simnic_doctor
  else
    echo "note: nft not installed: the firewall rule case ran with iptables only"
  fi
}

# blackhole: A blackhole policy rule (tutorial 6.4, step 2)
case_blackhole() {
  lo_device
  # A policy rule that blackholes UDP 4791 before the local table: the
  # kernel refuses at once.
  ip rule add pref 100 table local && ip rule del pref 0 &&
    ip rule add pref 10 ipproto udp dport 4791 blackhole || fail "ip rule"
  doctor rxe_lo
  status_is 1
  has FAIL "udp4791 rxe_lo" "the kernel refuses to send UDP to 127.0.0.1:4791"
  ip rule del pref 10; ip rule add pref 0 table local; ip rule del pref 100
  doctor rxe_lo
  has OK "udp4791 rxe_lo" "reaches rxe_lo"
}

# stale: Objects of a process that is gone (tutorial 6.5)
case_stale() {
  lo_device
  # Into a file: the child keeps the parent's stdout, and a $(...) would wait
  # for it.
  "$SIMNIC" exec -- "$ORPHAN" rxe_lo >"$work/orphan" 2>&1
  line=$(cat "$work/orphan")
  owner=$(sed -n 's/^owner \([0-9]*\) holder.*/\1/p' <<<"$line")
  holder=$(sed -n 's/.* holder \([0-9]*\)$/\1/p' <<<"$line")
  [ -n "$owner" ] && [ -n "$holder" ] || fail "doctor_orphan: $line"
  doctor rxe_lo
  status_is 1
  has FAIL "stale rxe_lo" "pid $owner is gone but 1 CQ, 1 PD, 1 QP of it remain on rxe_lo"
  grep -q 'ss -xp' <<<"$out" || fail "no fix for stale objects: $out"
  kill "$holder"; wait "$holder" 2>/dev/null; holder=
  for _ in $(seq 50); do
    doctor rxe_lo
    [ "$rc" -eq 0 ] && break
    sleep 0.1
  done
  has OK "stale rxe_lo" "belongs to a running process"
}

# netdev: A netdev down, and one without an address (tutorial 6.3)
case_netdev() {
  # A veth pair in the test's namespace: d0 carries the device, d0p is the
  # other end of the cable.
  ip link add d0 type veth peer name d0p && ip addr add 10.77.0.1/24 dev d0 && ip link set d0p up &&
    ip link set d0 up || { echo "FAIL: veth d0"; exit 1; }
  "$SIMNIC" link add dd type soft netdev d0 || fail "link add dd"
  doctor dd
  status_is 0
  has OK "gid dd" "index 1 \(::ffff:10.77.0.1\)"
  has OK "udp4791 dd" "reaches dd"
  ip link set d0 down
  doctor dd
  status_is 1
  has FAIL "port dd" "state DOWN"
  has FAIL "netdev dd" "netdev d0 is DOWN"
  grep -q 'fix: ip link set d0 up' <<<"$out" || fail "no fix for a netdev down: $out"
  # The symptom (tutorial 4.1, 6.3): ibv_devinfo shows PORT_DOWN, as the port
  # follows the netdev's events.
  info=$("$SIMNIC" exec -- ibv_devinfo -d dd)
  grep -q 'PORT_DOWN' <<<"$info" || fail "ibv_devinfo: $info"
  ip link set d0 up
  # UP, but the other end of the cable is down: no carrier.
  ip link set d0p down
  doctor dd
  status_is 1
  has FAIL "netdev dd" "netdev d0 is UP but has no carrier"
  ip link set d0p up
  for _ in $(seq 50); do doctor dd; [ "$rc" -eq 0 ] && break; sleep 0.1; done
  status_is 0
  ip addr flush dev d0
  doctor dd
  status_is 1
  has FAIL "address dd" "netdev d0 has no IPv4 address"
  # The tutorial's "empty GID table": the netdev has no address (flush took
  # the IPv6 link-local one too), so the only GID left is the default one at
  # index 0, which ib_core derives from the MAC, not from an address; none is
  # RoCE v2 over IPv4.
  has FAIL "gid dd" "1 GID\(s\), none RoCE v2 over IPv4"
  gids=$("$SIMNIC" resource show gid -d dd)
  [[ "$gids" =~ ^link\ dd/1\ index\ 0\ gid\ fe80::[0-9a-f:]+\ type\ RoCEv2$ ]] ||
    fail "GIDs of d0 without addresses: $gids"
  # An address again: the IPv4 GID comes back at index 1.
  ip addr add 10.77.0.1/24 dev d0
  for _ in $(seq 50); do doctor dd; [[ "$out" == *"OK    gid dd"* ]] && break; sleep 0.1; done
  has OK "gid dd" "index 1 \(::ffff:10.77.0.1\)"
  ip addr flush dev d0
  # A device cannot be made on a netdev without an address, as the tutorial
  # found (no IPv4 GID): link add says so.
  "$SIMNIC" link delete dd || fail "link delete dd"
  msg=$("$SIMNIC" link add dd type soft netdev d0 2>&1) && fail "link add on d0 without an address worked"
  grep -q 'no IPv4 address' <<<"$msg" || fail "link add on d0 without an address says: $msg"
}

# peer: Two hosts: the probe to a peer (--peer)
case_peer() {
  # The peer is a network namespace of its own behind a veth pair, with a
  # daemon and a device of its own. Its CM answers the probe's DREQ with a
  # DREP, which comes back to pa.
  if command -v iptables >/dev/null && ip netns add "simnic-doctor-$$"; then
    peer_ns=simnic-doctor-$$
    in_peer() { ip netns exec "$peer_ns" env SIMNIC_RUNTIME_DIR="$work/rt-peer" "$@"; }
    mkdir -m 700 "$work/rt-peer"
    ip link add p0 type veth peer name p1 && ip link set p1 netns "$peer_ns" &&
      ip addr add 10.88.0.1/24 dev p0 && ip link set p0 up &&
      ip -n "$peer_ns" addr add 10.88.0.2/24 dev p1 && ip -n "$peer_ns" link set p1 up &&
      ip -n "$peer_ns" link set lo up || fail "veth to the peer"
    "$SIMNIC" link add pa type soft netdev p0 || fail "link add pa"
    in_peer "$SIMNIC" link add pb type soft netdev p1 || fail "link add pb in the peer"
    doctor pa --peer 10.88.0.2
    status_is 0
    has OK "udp4791 pa" "the peer 10.88.0.2 answers a CM request sent from 10.88.0.1 to 10.88.0.2:4791"
    # A probe returns only when all of its datagrams and answers are in: the
    # local probe's 3 (dropped, no such QP) and the peer's 3 DREPs. One still
    # on its way would be taken for an answer by the next probe.
    [ "$(stat_of pa rx_drops_no_qp)" = 3 ] && [ "$(stat_of pa rx_packets)" = 6 ] ||
      fail "after one doctor --peer, pa counted rx_drops_no_qp $(stat_of pa rx_drops_no_qp) and rx_packets $(stat_of pa rx_packets), not 3 and 6"
    # The tutorial's firewall, on the peer: this host's own probe passes, the
    # peer's finds it.
    ip netns exec "$peer_ns" iptables -I INPUT -p udp --dport 4791 -j DROP || fail "iptables in the peer"
    doctor pa --peer 10.88.0.2 --probe-timeout 500
    status_is 1
    has OK "udp4791 pa" "reaches pa"
    has FAIL "udp4791 pa" "got no answer back to pa"
    ip netns exec "$peer_ns" iptables -F INPUT
    # A rule for p0 alone here: the local probe goes through lo and cannot see
    # it (doctor says so), the peer's does.
    iptables -I INPUT -i p0 -p udp --dport 4791 -j DROP || fail "iptables -i p0"
    doctor pa --probe-timeout 500
    has OK "udp4791 pa" "--peer ADDR probes the way to another host"
    doctor pa --peer 10.88.0.2 --probe-timeout 500
    status_is 1
    has FAIL "udp4791 pa" "got no answer back to pa"
    iptables -F INPUT
    # No RoCE device on the peer: nothing answers.
    in_peer "$SIMNIC" link delete pb
    doctor pa --peer 10.88.0.2 --probe-timeout 500
    status_is 1
    has FAIL "udp4791 pa" "the peer has no RoCE device"
    doctor pa --peer not-an-address
    has FAIL "udp4791 pa" "is not an IPv4 address"
    in_peer "$SIMNIC" daemon --stop
    "$SIMNIC" link delete pa
    ip netns del "$peer_ns"
    peer_ns=
  else
    echo "note: no iptables, or ip netns add failed (not root?): the --peer case did not run"
  fi
}

# not_dumpable: A program the daemon cannot reach: not dumpable
case_not_dumpable() {
  # A set-user-ID copy of simnic, run by root as nobody: the kernel makes the
  # process not dumpable, as it does any set-user-ID program.
  cp "$SIMNIC" "$work/simnic-suid" && chown nobody "$work/simnic-suid" && chmod 4755 "$work/simnic-suid"
  out=$(SIMNIC_RUNTIME_DIR=$work/none "$work/simnic-suid" doctor 2>&1); rc=$?
  if [ "$(stat -c %U "$work/simnic-suid")" = nobody ] && [ "$(id -u)" -eq 0 ]; then
    status_is 1
    has FAIL ptrace "this process is not dumpable"
  fi
  out=$("$SIMNIC" doctor 2>&1)
  grep -q 'not dumpable' <<<"$out" && fail "an ordinary doctor says it is not dumpable: $out"
}

# dead_daemon: A daemon that died
case_dead_daemon() {
  lo_device
  pid=$(daemon_pid)
  kill -9 "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  doctor
  status_is 1
  has FAIL daemon "the daemon that ran here is gone"
}

# hung_daemon: a daemon that takes connections but does not answer (stopped)
case_hung_daemon() {
  lo_device
  pid=$(daemon_pid)
  kill -STOP "$pid"
  doctor
  kill -CONT "$pid"
  status_is 1
  has FAIL daemon "does not answer|does not take connections"
  grep -q 'fix: simnic daemon --stop' <<<"$out" || fail "no fix for a hung daemon: $out"
  doctor
  has OK daemon "pid $pid answers"
}

# runtime_dir: the private fallback runtime directory refused (tutorial 2.4's
# device nodes with the wrong permissions), as an ordinary user
case_runtime_dir() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "note: not root: the ordinary-user case did not run"
    return
  fi
  cp "$SIMNIC" "$work/simnic-user" && chmod 755 "$work/simnic-user"
  mkdir -m 1777 "$work/tmp"
  mkdir -m 755 "$work/tmp/simnic-$(id -u nobody)"
  chown nobody "$work/tmp/simnic-$(id -u nobody)"
  out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
    env -u SIMNIC_RUNTIME_DIR -u XDG_RUNTIME_DIR TMPDIR="$work/tmp" "$work/simnic-user" doctor 2>&1); rc=$?
  status_is 1
  has FAIL runtime_dir "simnic-$(id -u nobody)"
  has SKIP device "no daemon"
  chmod 700 "$work/tmp/simnic-$(id -u nobody)"
  out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
    env -u SIMNIC_RUNTIME_DIR -u XDG_RUNTIME_DIR TMPDIR="$work/tmp" "$work/simnic-user" doctor 2>&1); rc=$?
  has OK runtime_dir "the private fallback"
  has FAIL daemon "no simnic daemon is running"
}

declare -F "case_$CASE" >/dev/null || { echo "FAIL: no case '$CASE'"; exit 2; }
"case_$CASE"
sys_finish "cli.doctor.$CASE"
