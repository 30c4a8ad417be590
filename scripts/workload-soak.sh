#!/usr/bin/env bash
# A long randomized run of simnic-workload (issue 10 §6): N seeds between a
# soft and a model device on a `simnic wire`, each type as requester in turn,
# optionally under wire faults. The first failing seed of each pair is shrunk
# and its minimal case printed with the command that reruns it.
#
#   scripts/workload-soak.sh [-b BUILD] [-n SEEDS] [-s FIRST] [-f FAULT]... [-m MTU] [-r RESULTS]
#
#   -b BUILD   the build directory (default: build)
#   -n SEEDS   seeds per pair (default 1000)
#   -s FIRST   the first seed (default 1)
#   -f FAULT   a wire fault rule (`simnic wire --help`), e.g. drop=1%,reorder=1%;
#              with any fault the runs take --dup-ok (UC and UD may lose and,
#              when the wire duplicates, repeat a message; RC stays exact)
#   -m MTU     the devices' MTU (default 1500: active MTU 1024; 9000: 4096)
#   -r FILE    append the results lines (results.jsonl, kind workload) here
#
# Exit 0 when every seed passed. CI runs a short version (ctest
# workload.soak: 40 seeds per pair).
set -u
BUILD=build N=1000 FIRST=1 MTU=1500 RESULTS=
FAULTS=()
while getopts "b:n:s:f:m:r:h" o; do
  case $o in
    b) BUILD=$OPTARG ;;
    n) N=$OPTARG ;;
    s) FIRST=$OPTARG ;;
    f) FAULTS+=(--fault "$OPTARG") ;;
    m) MTU=$OPTARG ;;
    r) RESULTS=$OPTARG ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
  esac
done
SIMNIC=$(realpath "$BUILD/cli/simnic")
LIB=$(realpath "$BUILD/verbs_provider/libsimnic-verbs.so")
WL=$(realpath "$BUILD/testbench/workload/simnic-workload")
for f in "$SIMNIC" "$LIB" "$WL"; do [ -e "$f" ] || { echo "missing $f: build simnic, simnic_verbs, simnic_workload"; exit 2; }; done
LAST=$((FIRST + N - 1))
work=$(mktemp -d /tmp/simnic-soak.XXXXXX)
export SIMNIC_RUNTIME_DIR=$work/rt
mkdir -m 700 "$SIMNIC_RUNTIME_DIR"
wire_pid=
cleanup() {
  [ -n "$wire_pid" ] && kill "$wire_pid" 2>/dev/null
  "$SIMNIC" daemon --stop >/dev/null 2>&1
  echo "logs: $work"
}
trap cleanup EXIT

"$SIMNIC" wire --ready-file "$work/wire.ready" --stats "$work/wire-stats.json" -q "${FAULTS[@]}" &
wire_pid=$!
for _ in $(seq 50); do [ -s "$work/wire.ready" ] && break; sleep 0.1; done
WIRE=$(awk '{print $2}' "$work/wire.ready")
[ -n "$WIRE" ] || { echo "the wire did not start"; exit 1; }
"$SIMNIC" link add wa type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 mtu "$MTU" || exit 1
"$SIMNIC" link add wb type model wire "127.0.0.1:$WIRE" addr 10.0.0.11/24 mtu "$MTU" || exit 1

loss=()
[ ${#FAULTS[@]} -gt 0 ] && loss=(--dup-ok)
res=()
[ -n "$RESULTS" ] && mkdir -p "$(dirname "$RESULTS")"
[ -n "$RESULTS" ] && res=(--results "$RESULTS")
failed=0
# pair SERVER CLIENT CLIENT_TYPE SERVER_TYPE
pair() {
  local port=$((20000 + RANDOM % 20000)) t0 t1 rc
  t0=$(date +%s)
  LD_PRELOAD=$LIB "$WL" -d "$1" -p "$port" >"$work/$3.server" 2>&1 &
  local sp=$!
  sleep 0.3
  LD_PRELOAD=$LIB "$WL" -d "$2" -p "$port" --seeds "$FIRST-$LAST" --shrink "${loss[@]}" "${res[@]}" \
    --target "$3" --peer "$4" 127.0.0.1 >"$work/$3.out" 2>&1
  rc=$?
  wait "$sp"
  t1=$(date +%s)
  echo "== $3 requester, $4 responder: seeds $FIRST-$LAST, $((t1 - t0)) s"
  grep -A1 "FAIL" "$work/$3.out" | head -20
  sed -n '/^shrinking/,/^rerun/p' "$work/$3.out"
  tail -1 "$work/$3.out"
  [ "$rc" -eq 0 ] || failed=1
}
pair wa wb model soft
pair wb wa soft model
[ ${#FAULTS[@]} -gt 0 ] && { kill "$wire_pid"; wait "$wire_pid" 2>/dev/null; wire_pid=; echo "wire: $(cat "$work/wire-stats.json")"; }
exit $failed
