# Sourced by the system tests that run RDMA applications against a private
# simnic daemon as an ordinary user. After `. lib.sh`:
#
#   sys_init [--as-caller] NAME VAR...
#                          a work directory /tmp/simnic-NAME.XXXXXX ($work,
#                          removed by sys_cleanup) with a runtime directory
#                          $work/rt; when root (CI is), every file named by a
#                          VAR (SIMNIC, LIB, test programs) is copied there
#                          and VAR rewritten, so that `nobody` can run it,
#                          and AS becomes the setpriv prefix that drops to
#                          nobody (--as-caller: no copies, no drop; the test
#                          runs as whoever started it). Exports
#                          SIMNIC_RUNTIME_DIR and SIMNIC_VERBS_LIB (from $LIB,
#                          if set).
#   sys_dir DIR...         more directories under $work, writable by whoever
#                          the test runs as.
#   sim ARGS...            the simnic CLI, as that user.
#   app CMD...             CMD as that user, with $LIB preloaded.
#   link_add DEV ARGS...   `simnic link add DEV` on lo, of $SIMNIC_DEVICE_TYPE
#                          (default soft) with $SIMNIC_LINK_OPTS (e.g.
#                          "loopback on") after ARGS; the test stops if it
#                          fails.
#   free_port [N]          a TCP port P such that P..P+N-1 (N default 1) are
#                          below the ephemeral range and used by no socket,
#                          for a test's servers.
#   wait_listen PORT [PID [NETNS]]
#                          waits (up to 10 s) for a TCP socket listening on
#                          PORT (in NETNS), i.e. for a server to be ready;
#                          stops early if process PID has exited.
#   wait_cm_listen PORT [PID]
#                          waits (up to 10 s) for an rdma_cm ID listening on
#                          PORT on a simnic device (`simnic resource show
#                          cm_id`), i.e. for an RDMA CM server to be ready:
#                          a client's REQ that comes sooner is rejected
#                          (no one listens on its service ID); stops early if
#                          process PID has exited.
#   cm_race_lost FILE      whether a perftest -R client, whose output is FILE,
#                          was rejected because its REQ came before its
#                          server's second rdma_listen (see below): the pair
#                          is to be started again.
#   wait_no_qps            waits (up to 5 s) for the device to hold no QP: the
#                          daemon learns of a process's end from its closed
#                          connection.
#   nothing_left WHAT KIND...
#                          the device holds no object of each KIND (qps, cqs,
#                          mrs, mws, pds: the counts of `simnic resource show
#                          -j`); a failed check names WHAT.
#   rping_data N PREFIX    the lines rping -v prints for pings 0..N-1, each
#                          PREFIX then rping's data: "rdma-ping-I: " and
#                          letters from 'A'+I upward, wrapping after 'z' to
#                          'A', up to 63 bytes.
#   capture_start FILE [ip netns exec NS] tcpdump ARGS...
#                          starts the tcpdump command (-U --immediate-mode -w
#                          FILE added; its stderr in FILE.err, its pid in
#                          $dump_pid) and waits (up to 10 s) until it says it
#                          is listening: a frame sent before that is not in
#                          the capture, and a fixed sleep was too short for a
#                          loaded CI machine.
#   capture_stop           stops it and waits for it (SIGTERM: it writes out
#                          what it has read; a frame still in its kernel ring
#                          is lost, so a test that needs every frame waits for
#                          them first).
#   fail MESSAGE           counts a failed check ($failures); at the first,
#                          a daemon that no longer answers is reported
#                          (daemon_hang_report: its log's tail, its stacks).
#   sys_finish NAME        "NAME: passed" and exit 0 if no check failed, else
#                          "NAME: N checks failed" and exit 1.
#   daemon_pid             the pid of the private daemon (from its state file).
#   stall_watch SECS PROG...
#                          a watcher that, if the test still runs SECS
#                          seconds later, writes what a hung tool waits for
#                          to $work/stall.txt: the daemon's objects (`simnic
#                          resource show`: QPs and their states, CM IDs), the
#                          counters of the test's devices, the daemon's
#                          log's tail, and the stacks
#                          (eu-stack) of the running processes named PROG.
#                          fail() prints it, so that a hang seen once in CI
#                          (the tool then killed by its timeout) shows where
#                          it was; sys_cleanup stops the watcher.
#   stall_report SECS PROG...
#                          the same report at once, on stdout: for a test
#                          that sees its tools stuck before it stops them.
#   own_netns "$@"         runs the calling script again, with the same
#                          arguments, in a network namespace of its own (a
#                          user namespace too when not root), so that its
#                          devices on lo take nobody's UDP 4791 and its
#                          filters and interfaces touch nothing else; in
#                          there it returns. Call it right after sourcing
#                          this file, before anything else happens.
#   sys_cleanup [PIDVAR...]
#                          kills the processes whose pids the named variables
#                          hold (those set), deletes the devices link_add
#                          made, stops the private daemon and removes $work:
#                          the test's EXIT trap, e.g.
#                          trap 'sys_cleanup server_pid' EXIT.
own_netns() {
  # Set only between the re-exec and its return: a script the test starts
  # in there gets a namespace of its own again.
  if [ -n "${SIMNIC_IN_OWN_NETNS:-}" ]; then
    unset SIMNIC_IN_OWN_NETNS
    return
  fi
  export SIMNIC_IN_OWN_NETNS=1
  if [ "$(id -u)" -eq 0 ]; then exec unshare --net "$0" "$@"; fi
  exec unshare --user --map-root-user --net "$0" "$@"
}

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
  if [ "$failures" -eq 1 ]; then
    daemon_hang_report
    if [ -s "$work/stall.txt" ]; then sed 's/^/  /' "$work/stall.txt"; fi
  fi
  return 0
}

# Whether process $1 descends from process $2 (its parent chain in /proc).
descends_from() {
  local pid=$1 ppid
  while [ "$pid" -gt 1 ]; do
    [ "$pid" -eq "$2" ] && return 0
    ppid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [ -n "$ppid" ] || return 1
    pid=$ppid
  done
  return 1
}

stall_pid=
stall_watch() {
  local secs=$1
  shift
  (
    sleep "$secs"
    stall_report "$secs" "$@" >"$work/stall.tmp" 2>&1
    mv "$work/stall.tmp" "$work/stall.txt"
  ) </dev/null >/dev/null 2>&1 &
  stall_pid=$!
}

# stall_report SECS PROG...: what stall_watch writes, on stdout, for a test
# that finds its tools stuck itself (SECS: how long they have run).
stall_report() {
  local secs=$1 test_pid=$$ d p pid what
  shift
  echo "still running after $secs s: the device's objects, counters and the tools' stacks"
  for what in "" qp cm_id; do
    timeout 10 "${AS[@]}" "$SIMNIC" resource show $what 2>&1 | head -40 | sed 's/^/  /'
  done
  for d in "${devs[@]}"; do
    timeout 10 "${AS[@]}" "$SIMNIC" stats "$d" 2>&1 | awk '$2 != "0"' | head -60 | sed "s/^/  $d: /"
  done
  tail -20 "$SIMNIC_RUNTIME_DIR/simnicd.log" 2>/dev/null | sed 's/^/  log: /'
  command -v eu-stack >/dev/null || return 0
  # Each name once: a server and its client are often the same tool.
  for p in $(printf '%s\n' "$@" | sort -u); do
    # This test's own (ctest runs others beside it, with the same tools).
    for pid in $(pgrep -x "${p:0:15}"); do
      descends_from "$pid" "$test_pid" || continue
      echo "  $p (pid $pid):"
      timeout 20 eu-stack -p "$pid" 2>&1 | head -80 | sed 's/^/    /'
    done
  done
}

# At a test's first failure: a daemon that is alive but does not answer
# (`simnic link show` within 5 s) is named, with the tail of its log and its
# threads' stacks (eu-stack, elfutils), so that a hang seen once in CI
# shows where it waits.
daemon_hang_report() {
  local pid
  [ -n "${SIMNIC:-}" ] || return 0
  pid=$(daemon_pid)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  timeout 5 "${AS[@]}" "$SIMNIC" link show >/dev/null 2>&1 && return 0
  echo "the daemon (pid $pid) does not answer within 5 s; its log's tail and its threads:"
  tail -20 "$SIMNIC_RUNTIME_DIR/simnicd.log" 2>/dev/null | sed 's/^/  log: /'
  if command -v eu-stack >/dev/null; then
    timeout 30 eu-stack -p "$pid" 2>&1 | head -400 | sed 's/^/  /'
  fi
}

rping_data() {
  python3 - "$1" "$2" <<'PY'
import sys
for n in range(int(sys.argv[1])):
    s = "rdma-ping-%d: " % n
    c = 65 + n
    while len(s) < 63:
        s += chr(c)
        c = 65 if c >= 122 else c + 1
    print(sys.argv[2] + s)
PY
}

sys_finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$1: $failures checks failed"
    exit 1
  fi
  echo "$1: passed"
  exit 0
}

sys_init() {
  local drop=1 name var f
  [ "$1" = --as-caller ] && { drop=0; shift; }
  name=$1
  shift
  work=$(mktemp -d "/tmp/simnic-$name.XXXXXX")
  chmod 755 "$work"
  AS=()
  if [ "$drop" -eq 1 ] && [ "$(id -u)" -eq 0 ]; then
    for var in "$@"; do
      f=${!var}
      cp "$f" "$work/$(basename "$f")"
      chmod 755 "$work/$(basename "$f")"
      printf -v "$var" '%s' "$work/$(basename "$f")"
    done
    AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
  fi
  sys_dir rt
  export SIMNIC_RUNTIME_DIR=$work/rt
  # No kept devices of the user's (simnic link add ... persist) in a test's daemon.
  export SIMNIC_CONFIG_DIR=$work/no-kept-devices
  [ -n "${LIB:-}" ] && export SIMNIC_VERBS_LIB=$LIB
  return 0
}

sys_dir() {
  local d
  for d in "$@"; do
    mkdir -m 700 "$work/$d"
    [ "${#AS[@]}" -gt 0 ] && chown nobody:nogroup "$work/$d"
  done
  return 0
}

sim() { "${AS[@]}" "$SIMNIC" "$@"; }
# stat_in FILE COUNTER: one counter of a saved `simnic stats` (empty if it
# has none); stat_of DEV COUNTER: one of `simnic stats DEV` now.
stat_in() { awk -v k="$2" '$1 == k { print $2; exit }' "$1"; }
stat_of() { sim stats "$1" | stat_in /dev/stdin "$2"; }

app() { "${AS[@]}" env LD_PRELOAD="$LIB" "$@"; }

devs=()
link_add() {
  local dev=$1 opts
  shift
  [[ " ${devs[*]} " == *" $dev "* ]] || devs+=("$dev")
  read -r -a opts <<<"${SIMNIC_LINK_OPTS:-}"
  sim link add "$dev" type "${SIMNIC_DEVICE_TYPE:-soft}" netdev lo "$@" "${opts[@]}" ||
    { echo "FAIL: simnic link add $dev"; exit 1; }
}

# A server binding a port that a client connection used as its ephemeral
# source port fails while that connection lingers in TIME-WAIT (60 s), its
# SO_REUSEADDR notwithstanding: perftest then prints "Couldn't listen to port"
# and the test fails at once. Ephemeral ports come from
# ip_local_port_range (32768-60999 by default), so servers take theirs below
# it, and none that a socket holds.
free_port() {
  local n=${1:-1} lo hi used p i
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range
  used=" $(ss -Htan 2>/dev/null | awk '{sub(/.*:/, "", $4); print $4}' | tr '\n' ' ') "
  for _ in $(seq 100); do
    if [ "$lo" -gt $((10000 + 1000 + n)) ]; then p=$((10000 + RANDOM % (lo - 10000 - n)))
    else p=$((hi + 1 + RANDOM % (65535 - hi - n))); fi
    for ((i = 0; i < n; i++)); do [[ $used == *" $((p + i)) "* ]] && continue 2; done
    break
  done
  echo "$p"
}

wait_listen() {
  local port=$1 pid=${2:-} ns=${3:-} in_ns=()
  [ -n "$ns" ] && in_ns=(ip netns exec "$ns")
  for _ in $(seq 100); do
    "${in_ns[@]}" ss -ltn 2>/dev/null | grep -q ":$port " && return 0
    [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && return 1
    sleep 0.1
  done
  return 1
}

# perftest -R listens twice on one port, the second time after a handshake
# over its first connection whose last SEND the client sees complete before
# the server does (the server waits for the ACK). Then the client's
# rdma_resolve_addr, rdma_resolve_route and rdma_connect race the server's
# rdma_create_id, rdma_bind_addr and rdma_listen, and a REQ that comes first
# is rejected with reason 8 (no one listens on its service ID, as ib_cm
# answers); perftest 4.5's own retry then crashes (it resolves again on the
# IDs it has just destroyed). On the kernel the server's three calls are
# system calls that never sleep, while the client's wait for their events;
# here each is a round trip to the daemon (about 0.45 ms for the three
# against the client's 1 ms, on two cores with a CPU hog), so one thread
# descheduled for a time slice decides the race: the server lost 14 of 75
# (ib_write_lat -R, one or two hogs on two cores). A test starts the pair
# again, on a new port, up to 11 times.
cm_race_lost() { grep -q "RDMA_CM_EVENT_REJECTED; error: 8" "$1"; }

wait_cm_listen() {
  local port=$1 pid=${2:-}
  for _ in $(seq 100); do
    sim resource show cm_id 2>/dev/null | grep -Eq " state LISTEN .* src-addr [^ ]*:$port( |$)" && return 0
    [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && return 1
    sleep 0.1
  done
  return 1
}

# compare_cm_mads PCAP GOLDEN_CASE: the CM MADs of PCAP (a device's capture
# on lo) against those of the same tool between two kernel-rxe VMs, each
# reference kernel's ($GOLDEN/<kernel>/mtu4096/GOLDEN_CASE.pcap), with the
# script's $COMPARE (testbench/system/cm_compare.cpp). The verdicts are kept
# in $work/compare-GOLDEN_CASE-<kernel>.out. simnic's REQ carries 6.1's local
# ACK timeout (19; 6.12's rdma_cm shortened the RoCE packet lifetime, giving
# 17: docs/rxe-wire-rules.md, "CM on QP1"), so against 6.12 that field is
# left out.
compare_cm_mads() {
  local k out ignore
  for k in 6.1 6.12; do
    out=$work/compare-$2-$k.out
    ignore=()
    [ "$k" = 6.12 ] && ignore=(--ignore local_ack_timeout)
    "$COMPARE" "${ignore[@]}" "$GOLDEN/$k/mtu4096/$2.pcap" "$1" >"$out" 2>&1 ||
      fail "CM MADs differ from kernel $k's ($2): $(cat "$out")"
  done
}

wait_no_qps() {
  for _ in $(seq 50); do
    sim resource show -j 2>&1 | grep -Eq '"qps":0[,}]' && return 0
    sleep 0.1
  done
  return 1
}

nothing_left() {
  local what=$1 kind counts
  shift
  counts=$(sim resource show -j 2>&1)
  for kind in "$@"; do
    grep -Eq "\"$kind\":0([,}])" <<<"$counts" || fail "$kind left behind $what: $counts"
  done
}

capture_start() {
  local file=$1; shift
  "$@" -U --immediate-mode -w "$file" >/dev/null 2>"$file.err" &
  dump_pid=$!
  for _ in $(seq 100); do
    grep -q "listening on" "$file.err" && return 0
    kill -0 "$dump_pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "tcpdump did not start listening: $(cat "$file.err")"
}
capture_stop() {
  [ -n "${dump_pid:-}" ] || return 0
  kill "$dump_pid" 2>/dev/null
  wait "$dump_pid" 2>/dev/null
  dump_pid=
}

daemon_pid() { sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$SIMNIC_RUNTIME_DIR/simnicd.state" 2>/dev/null; }

sys_cleanup() {
  local var dev pid
  # The watcher's sleep too, or it would outlive the test.
  [ -n "$stall_pid" ] && pkill -P "$stall_pid" 2>/dev/null
  for var in stall_pid "$@"; do
    [ -n "${!var:-}" ] && kill "${!var}" 2>/dev/null
  done
  for dev in "${devs[@]}"; do sim link delete "$dev" >/dev/null 2>&1; done
  pid=$(daemon_pid)
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  rm -rf "$work"
}
