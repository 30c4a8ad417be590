#!/usr/bin/env bash
# UCX (Debian's ucx-utils, 1.13) sees a simnic device, as an ordinary user
# (the script drops to nobody under root).
#
#   test_ucx.sh CASE SIMNIC LIBSIMNIC_VERBS
#
# info: UCX lists an IB device only if /dev/infiniband/<dev_name> is a
# character device the process may read and write; the preloaded library
# answers stat/access for simnic devices' names (host_files.cc), and the
# device's sysfs GID attributes UCX reads next. `ucx_info -d` then lists the
# device's memory domain with rc_verbs and ud_verbs on port 1; without the
# library it does not. Paths of no simnic device are untouched.
#
# perftest: ucx_perftest between two processes on the device: tag latency
# over ud_verbs, put bandwidth over rc_verbs (ud_verbs wiring it up), each
# with its final line. UCX's UD drops, on RoCE, a packet whose GRH does not
# name one of its GIDs, and finds the GID's length from the CQE's SL, where
# mlx5 puts the packet's L3 type (2: IPv4); rxe's CQEs carry SL 0, as
# simnic's do, and UCX then reads 16 bytes of the IPv4 header as a GID and
# drops every packet. The test turns that check off
# (UCX_UD_VERBS_ETH_DGID_CHECK=n), as UCX over kernel rxe needs.
set -u
CASE=$1 SIMNIC=$2 LIB=$3
DEV=simucx_lo
. "$(dirname "$0")/lib.sh"
command -v ucx_info >/dev/null || { echo "ucx_info not installed (apt-get install ucx-utils)"; exit 1; }
sys_init ucx SIMNIC LIB
trap 'sys_cleanup' EXIT

link_add "$DEV"

case $CASE in
info)
  app ucx_info -d >"$work/info.out" 2>&1 || fail "ucx_info -d exited $?"
  grep -q "^# Memory domain: $DEV\$" "$work/info.out" || fail "no memory domain $DEV"
  # The transports listed after the device's memory domain, each on port 1.
  md=$(sed -n "/^# Memory domain: $DEV\$/,/^# Memory domain: /p" "$work/info.out")
  for tl in rc_verbs ud_verbs; do
    grep -Eq "Transport: $tl\$" <<<"$md" || fail "no $tl transport for $DEV"
  done
  [ "$(grep -c "Device: $DEV:1\$" <<<"$md")" -ge 2 ] || fail "rc_verbs and ud_verbs not both on $DEV:1"
  # Without the library UCX has no simnic device.
  "${AS[@]}" ucx_info -d 2>&1 | grep -q "Memory domain: $DEV" && fail "ucx_info lists $DEV without the library"

  # The node and the sysfs files, as any program sees them through the C
  # library: bash's test (stat, access), cat (open).
  node=/dev/infiniband/simnic_uverbs0
  app bash -c "[ -c $node ] && [ -r $node ] && [ -w $node ] && [ ! -x $node ]" || fail "$node is not a rw character device"
  app bash -c "[ -e /dev/infiniband/simnic_uverbs9 ]" && fail "a node for a device that does not exist"
  app bash -c "[ -e /dev/infiniband/not_simnic ]" && fail "a node for a name that is not simnic's"
  sys=/sys/class/infiniband/$DEV/ports/1/gid_attrs
  [ "$(app cat "$sys/types/1")" = "RoCE v2" ] || fail "GID 1's type: '$(app cat "$sys/types/1" 2>&1)'"
  [ "$(app cat "$sys/ndevs/1")" = "lo" ] || fail "GID 1's netdev: '$(app cat "$sys/ndevs/1" 2>&1)'"
  app cat "/sys/class/infiniband/$DEV/device/numa_node" >/dev/null 2>&1 &&
    fail "device/numa_node exists (rxe on lo has no parent device)"
  grep -E "Memory domain: $DEV|Transport: (rc|ud)_verbs" "$work/info.out"
  ;;
perftest)
  port=$(free_port 2)
  export UCX_NET_DEVICES=$DEV:1 UCX_UD_VERBS_ETH_DGID_CHECK=n
  # run TLS PORT ARGS...: server and client; the client's Final line.
  run() {
    local tls=$1 p=$2 spid
    shift 2
    UCX_TLS=$tls app timeout 60 ucx_perftest -p "$p" >"$work/server.out" 2>&1 &
    spid=$!
    wait_listen "$p" "$spid"
    UCX_TLS=$tls app timeout 60 ucx_perftest 127.0.0.1 -p "$p" "$@" >"$work/client.out" 2>&1 ||
      fail "ucx_perftest $* over $tls exited $?"
    wait "$spid" || fail "ucx_perftest's server ($tls) exited $?"
    grep -E '^Final: +[0-9]+ ' "$work/client.out" || {
      fail "no Final line from ucx_perftest $* over $tls"
      cat "$work/server.out" "$work/client.out"
    }
  }
  run ud_verbs,self "$port" -t tag_lat -n 1000
  run rc_verbs,ud_verbs,self $((port + 1)) -t ucp_put_bw -s 65536 -n 200
  ;;
*) echo "unknown case $CASE"; exit 2 ;;
esac
sys_finish "ucx.$CASE"
