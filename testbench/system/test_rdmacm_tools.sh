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
# server answers each message through ibv_create_ah_from_wc. Each case
# checks both ends' exit status and report, then that the device holds nothing once they are
# gone.
set -u
CASE=$1 SIMNIC=$2 LIB=$3
DEV=simcm_lo
. "$(dirname "$0")/lib.sh"
sys_init rdmacm SIMNIC LIB
PORT=$(free_port 1)

trap 'sys_cleanup server_pid' EXIT

server_stays=0
case $CASE in
rdma_server)
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
  # Two IDs, 50 messages each way on each (udaddy's fixed port 7174).
  server=(udaddy -b 127.0.0.1 -c 2 -C 50)
  client=(udaddy -s 127.0.0.1 -c 2 -C 50)
  expect_server='^return status 0' expect_client='^return status 0'
  ;;
cmtime)
  # 50 connections: each step's line is "name : total/connection times".
  server=(cmtime -b 127.0.0.1 -p "$PORT")
  client=(cmtime -s 127.0.0.1 -p "$PORT" -c 50)
  expect_server='' expect_client='^disconnect *:'
  server_stays=1
  ;;
*) echo "unknown case $CASE"; exit 2 ;;
esac

link_add "$DEV"

app timeout 60 stdbuf -oL "${server[@]}" >"$work/server.out" 2>&1 &
server_pid=$!
# The server listens once its CM ID does; nothing shows it on lo (no TCP):
# the client is run again while its REQ finds no listener (ECONNREFUSED, a
# REJ "invalid service ID"; for udaddy UNREACHABLE, a SIDR_REP "unsupported").
for _ in $(seq 30); do
  app timeout 60 stdbuf -oL "${client[@]}" >"$work/client.out" 2>&1
  client_rc=$?
  [ "$client_rc" -eq 0 ] && break
  grep -Eqi "refused|REJECTED|UNREACHABLE" "$work/client.out" || break
  sleep 0.2
done
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

# The daemon learns of each process's end from its closed connection.
for _ in $(seq 50); do
  sim resource show -j 2>&1 | grep -Eq '"contexts":0[,}]' && break
  sleep 0.1
done
nothing_left "after exit" qps cqs mrs pds

if [ "$failures" -ne 0 ]; then
  echo "--- server (${server[*]}):"; cat "$work/server.out"
  echo "--- client (${client[*]}):"; cat "$work/client.out"
else
  cat "$work/client.out"
fi
sys_finish "$CASE"
