#!/usr/bin/env bash
# rdmacm-utils beyond rping against a simnic device on lo, both ends on one
# host, as an ordinary user (the script drops to nobody under root).
#
#   test_rdmacm_tools.sh CASE SIMNIC LIBSIMNIC_VERBS
#
# rdma_server/rdma_client and rdma_xserver/rdma_xclient use librdmacm's
# synchronous API: rdma_getaddrinfo with RAI_PASSIVE, rdma_create_ep (the QP
# of each connection made by rdma_get_request, its CQs and completion
# channels made by librdmacm), a connection's own event channel
# (rdma_migrate_id), the rdma_verbs.h helpers (rdma_reg_msgs,
# rdma_post_recv, rdma_get_recv_comp...). cmtime connects and disconnects
# many IDs at once, its QPs created without CQs; its server runs until it
# is stopped, as it does on the kernel's rdma_cm. udaddy is UD through
# rdma_cm: each client ID resolves the server's QP with SIDR (rdma_connect on
# RDMA_PS_UDP) and sends to the address vector ESTABLISHED carries; the
# server answers each message through ibv_create_ah_from_wc. ucmatose is
# the asynchronous API with several connections at once, its -m case moving
# each ID to a new event channel (rdma_migrate_id), its -t case setting the
# client IDs' ToS (rdma_set_option RDMA_OPTION_ID_TOS before
# rdma_resolve_route): the REQ's primary traffic class and the IPv4 TOS of
# every RC packet both ways carry it, the server's QPs taking it from the REQ.
#
# rstream, riostream and rcopy are rsockets, the socket API librdmacm
# builds on rdma_cm IDs made without a channel and the QPs it makes for
# them: data moves as RDMA WRITE with immediate into the peer's ring (and
# riostream's riowrite straight into its riomap'd buffer), inline when
# small, completions through a completion channel, connections driven with
# the channel's fd non-blocking. rstream and riostream check every byte
# (-T v: verify); rcopy's copy is compared with its source.
# Each case checks both ends' exit status and report, then that the device
# holds nothing once they are gone.
#
# The rdma_cm tools' CM MADs, captured on the device, are compared with those
# kernel ib_cm sent for the same tool between two kernel-rxe VMs (the golden
# captures of 6.1 and 6.12, testbench/golden/*/mtu4096: lo's active MTU is
# 4096) by CM_COMPARE, field by field but for the IDs, QPNs, PSNs and
# addresses of each run. udaddy first asks with no server listening: the
# SIDR_REP "unsupported" that answers is compared with the kernel's.
#
#   test_rdmacm_tools.sh CASE SIMNIC LIBSIMNIC_VERBS CM_COMPARE GOLDEN_DIR
set -u
CASE=$1 SIMNIC=$2 LIB=$3 COMPARE=$4 GOLDEN=$5
DEV=simcm_lo
. "$(dirname "$0")/lib.sh"
sys_init rdmacm SIMNIC LIB
PORT=$(free_port 1)

trap 'sys_cleanup server_pid' EXIT

server_stays=0
# capture: capture the device's packets though there is no golden exchange.
capture=0
# golden: the golden capture of the same tool's CM exchange, if any.
golden=''
# The client starts once the server listens. For the rdma_cm tools that is
# when the daemon shows their ID in LISTEN on listen_port (a REQ that comes
# sooner is rejected: no one listens on its service ID; with several
# connections, as ucmatose makes, some REQs would find the listener and some
# not, and the client's error would then fail the server's accepts).
# rsockets' tools set `ready` instead: what they print once they listen
# (after rlisten, and librspreload's listen may be a TCP one); their
# connects are non-blocking, and one that finds no listener fails in rpoll
# with POLLERR, which says nothing of a REJ.
ready=''
listen_port=$PORT
# case_env: the environment both ends run in (VAR=value...).
case_env=()
case $CASE in
rdma_server)
  golden=rdma_client
  server=(rdma_server -p "$PORT")
  client=(rdma_client -s 127.0.0.1 -p "$PORT")
  expect_server='rdma_server: end 0' expect_client='rdma_client: end 0'
  ;;
rdma_xserver)
  server=(rdma_xserver -p "$PORT")
  client=(rdma_xclient -s 127.0.0.1 -p "$PORT")
  expect_server='rdma_xserver: end 0' expect_client='rdma_xclient: end 0'
  ;;
udaddy)
  golden=udaddy
  # Two IDs, 50 messages each way on each (udaddy's fixed port 7174).
  server=(udaddy -b 127.0.0.1 -c 2 -C 50)
  listen_port=7174
  client=(udaddy -s 127.0.0.1 -c 2 -C 50)
  expect_server='^return status 0' expect_client='^return status 0'
  ;;
ucmatose | ucmatose_migrate | ucmatose_tos)
  golden=ucmatose
  # Three connections, 20 messages of 1000 bytes each way on each.
  opts=(-p "$PORT" -c 3 -C 20 -S 1000)
  [ "$CASE" = ucmatose_migrate ] && opts+=(-m)
  server=(ucmatose -b 127.0.0.1 "${opts[@]}")
  client=(ucmatose -s 127.0.0.1 "${opts[@]}")
  # The REQ's traffic class differs from the golden exchange's (no ToS):
  # captured and checked below instead.
  [ "$CASE" = ucmatose_tos ] && golden='' capture=1 client+=(-t 0x20)
  expect_server='^return status 0' expect_client='^return status 0'
  ;;
rstream | rstream_nonblocking | rstream_resolve | rstream_async)
  # Blocking calls, 64 KiB transfers; non-blocking (MSG_DONTWAIT), 4 KiB;
  # the addresses from rdma_getaddrinfo, 1000 bytes; a server that waits in
  # rpoll (blocking: on its completion channel's fd) before each accept,
  # send and receive, 64 KiB. Each transfer's bytes verified. The report:
  # name bytes xfers iters ...
  # The async server's first rpoll, on its listener, takes 5 s: rsockets'
  # own accept thread and rpoll wait on the listener's event channel at
  # once, the thread takes the CONNECT_REQUEST, and rpoll, finding nothing
  # to accept yet, waits on the drained channel until rsockets'
  # wake_up_interval (5000 ms) has passed, whatever the device.
  # (Not the client with -T a: it polls before its last receive, and when
  # the server's last data and its DISCONNECT come in one CQ poll, rpoll
  # says POLLIN|POLLHUP, which rstream takes for an error, on any device.)
  srv_opts=()
  case $CASE in
  rstream) opts=(-T b -S 65536 -C 50) report='^custom +64k +50 +1 ' ;;
  rstream_nonblocking) opts=(-T n -S 4096 -C 200) report='^custom +4k +200 +1 ' ;;
  rstream_resolve) opts=(-T r -S 1000 -C 200) report='^custom +1000 +200 +1 ' ;;
  rstream_async) opts=(-T b -S 65536 -C 50) srv_opts=(-T a) report='^custom +64k +50 +1 ' ;;
  esac
  server=(rstream -b 127.0.0.1 -p "$PORT" -T v "${opts[@]}" "${srv_opts[@]}")
  client=(rstream -s 127.0.0.1 -p "$PORT" -T v "${opts[@]}")
  expect_server=$report expect_client=$report ready='^name '
  ;;
riostream)
  # riowrite into the peer's riomap'd buffer, 64 KiB, 20 transfers twice.
  server=(riostream -b 127.0.0.1 -p "$PORT" -T v -S 65536 -C 20 -I 2)
  client=(riostream -s 127.0.0.1 -p "$PORT" -T v -S 65536 -C 20 -I 2)
  expect_server='^custom +64k +20 +2 ' expect_client='^custom +64k +20 +2 ' ready='^name '
  ;;
rspreload | rspreload_fork)
  # An unmodified TCP program on rsockets through librdmacm's librspreload
  # (socket, connect, send... taken over): rstream -T s, its plain-sockets
  # mode. librspreload falls back to a TCP socket when rsocket fails, so the
  # device's counters must show the bytes (below). In the fork case the
  # server forks for each connection (rstream -T f) and librspreload's fork
  # support (RDMAV_FORK_SAFE=1) connects over TCP first, then moves the
  # connection to rsockets in the child.
  rsp=$(pkg-config --variable=libdir librdmacm 2>/dev/null)/rsocket/librspreload.so
  [ -f "$rsp" ] || rsp=/usr/lib/$(gcc -print-multiarch 2>/dev/null)/rsocket/librspreload.so
  case_env=(LD_PRELOAD="$LIB:$rsp")
  srv_mode=s
  if [ "$CASE" = rspreload_fork ]; then
    case_env+=(RDMAV_FORK_SAFE=1) srv_mode=f
    # The forked server takes librspreload's named semaphore (POSIX, in
    # /dev/shm, never unlinked); one another user made cannot be opened, and
    # the connection then stays on TCP. The test removes it if it made it.
    [ -e /dev/shm/sem.rsocket_fork ] || trap 'sys_cleanup server_pid; rm -f /dev/shm/sem.rsocket_fork' EXIT
  fi
  server=(rstream -T "$srv_mode" -b 127.0.0.1 -p "$PORT" -T v -S 65536 -C 50)
  client=(rstream -T s -s 127.0.0.1 -p "$PORT" -T v -S 65536 -C 50)
  expect_server='^custom +64k +50 +1 ' expect_client='^custom +64k +50 +1 ' ready='^name '
  ;;
rcopy)
  # A file of 3 MB and 5 bytes (no whole number of pages or of rcopy's
  # 1 MiB chunks), random bytes, copied to the server's side; the server
  # waits for the next file until it is stopped.
  sys_dir out
  head -c 3145733 /dev/urandom >"$work/src.bin"
  chmod 644 "$work/src.bin"
  server=(rcopy -p "$PORT")
  client=(rcopy "$work/src.bin" "127.0.0.1:$work/out/dst.bin" -p "$PORT")
  expect_server='' expect_client='^3145733 bytes in ' ready='waiting for connection'
  server_stays=1
  ;;
cmtime)
  golden=cmtime
  # 50 connections: each step's line is "name : total/connection times".
  server=(cmtime -b 127.0.0.1 -p "$PORT")
  client=(cmtime -s 127.0.0.1 -p "$PORT" -c 50)
  expect_server='' expect_client='^disconnect *:'
  server_stays=1
  ;;
*) echo "unknown case $CASE"; exit 2 ;;
esac

if [ "$CASE" = udaddy ]; then
  # Nobody listens yet: SIDR_REP with status 1 (unsupported), UNREACHABLE.
  link_add "$DEV" pcap "$SIMNIC_RUNTIME_DIR/rej.pcap"
  app timeout 30 udaddy -s 127.0.0.1 -c 1 -C 1 >"$work/rej.out" 2>&1 && fail "udaddy without a server succeeded"
  grep -q "RDMA_CM_EVENT_UNREACHABLE" "$work/rej.out" || fail "no UNREACHABLE without a server: $(cat "$work/rej.out")"
  sim link delete "$DEV" >/dev/null 2>&1  # closes and flushes the capture
  compare_cm_mads "$SIMNIC_RUNTIME_DIR/rej.pcap" sidr_reject
fi
if [ -n "$golden" ] || [ "$capture" -eq 1 ]; then
  link_add "$DEV" pcap "$SIMNIC_RUNTIME_DIR/dev.pcap"
else
  link_add "$DEV"
fi

# Both ends wait at most 60 s; what they wait for is recorded before then.
stall_watch 50 "${server[0]}" "${client[0]}"
# (env before stdbuf: stdbuf adds its library to LD_PRELOAD.)
app timeout 60 env "${case_env[@]}" stdbuf -oL "${server[@]}" >"$work/server.out" 2>&1 &
server_pid=$!
if [ -n "$ready" ]; then
  for _ in $(seq 100); do
    grep -Eq -- "$ready" "$work/server.out" && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  # An rsockets client that still finds no listener (ECONNREFUSED) runs
  # again.
  for _ in $(seq 30); do
    app timeout 60 env "${case_env[@]}" stdbuf -oL "${client[@]}" >"$work/client.out" 2>&1
    client_rc=$?
    [ "$client_rc" -eq 0 ] && break
    grep -Eqi "refused" "$work/client.out" || break
    sleep 0.2
  done
else
  wait_cm_listen "$listen_port" "$server_pid" ||
    fail "no rdma_cm ID listens on port $listen_port: $(sim resource show cm_id 2>&1) $(cat "$work/server.out")"
  app timeout 60 env "${case_env[@]}" stdbuf -oL "${client[@]}" >"$work/client.out" 2>&1
  client_rc=$?
fi
[ "$client_rc" -eq 0 ] || fail "client exited $client_rc"
grep -Eq -- "$expect_client" "$work/client.out" || fail "client report lacks /$expect_client/"
if [ "$server_stays" -eq 1 ]; then
  # It served every connection and is still waiting for more.
  kill -0 "$server_pid" 2>/dev/null || fail "server exited before it was stopped"
  # $server_pid is the subshell that runs `app`; its child is timeout,
  # which passes SIGTERM on to the tool.
  pkill -TERM -P "$server_pid"
  wait "$server_pid" 2>/dev/null
else
  wait "$server_pid"
  server_rc=$?
  [ "$server_rc" -eq 0 ] || fail "server exited $server_rc"
  grep -Eq -- "$expect_server" "$work/server.out" || fail "server report lacks /$expect_server/"
fi
server_pid=
if [ "$CASE" = rcopy ]; then
  cmp "$work/src.bin" "$work/out/dst.bin" || fail "rcopy's copy differs from its source"
fi
if [ "$CASE" = rspreload ] || [ "$CASE" = rspreload_fork ]; then
  # 50 transfers of 64 KiB each way (and more, for headers and acks) went
  # through the device, not over TCP.
  rx=$(sim stats "$DEV" 2>&1 | awk '$1 == "rx_bytes" {print $2}')
  [ "${rx:-0}" -ge $((2 * 50 * 65536)) ] || fail "the device received ${rx:-no} bytes: not rsockets"
fi

# The daemon learns of each process's end from its closed connection.
for _ in $(seq 50); do
  sim resource show -j 2>&1 | grep -Eq '"contexts":0[,}]' && break
  sleep 0.1
done
nothing_left "after exit" qps cqs mrs pds
if [ -n "$golden" ]; then
  sim link delete "$DEV" >/dev/null 2>&1
  compare_cm_mads "$SIMNIC_RUNTIME_DIR/dev.pcap" "$golden"
fi
if [ "$CASE" = ucmatose_tos ]; then
  sim link delete "$DEV" >/dev/null 2>&1  # closes and flushes the capture
  # Three REQs and three connections both ways (check_tos.py), each seen
  # leaving and arriving.
  python3 "$(dirname "$0")/check_tos.py" "$SIMNIC_RUNTIME_DIR/dev.pcap" 0x20 6 6 >"$work/tos.out" 2>&1 ||
    fail "ToS: $(cat "$work/tos.out")"
fi

if [ "$failures" -ne 0 ]; then
  echo "--- server (${server[*]}):"; cat "$work/server.out"
  echo "--- client (${client[*]}):"; cat "$work/client.out"
else
  cat "$work/client.out"
  for f in "$work"/compare-*.out "$work/tos.out"; do [ -f "$f" ] && tail -1 "$f"; done
fi
sys_finish "$CASE"
