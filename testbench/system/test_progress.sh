#!/usr/bin/env bash
# Progress on a terminal, nothing in scripts (issue 16): `simnic pcap` over a
# capture whose lines go to a file, and a `simnic bench --sweep`, with stderr
# on a pseudo-terminal (script(1)) show one rewritten line and erase it; with
# stderr not a terminal, or SIMNIC_NO_PROGRESS set, they print nothing on
# stderr; stdout is the same either way.
#
#   test_progress.sh SIMNIC SOURCE_DIR
set -u
SIMNIC=$1 SRC=$2
work=$(mktemp -d /tmp/simnic-progress.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cap=$SRC/testbench/golden/6.1/mtu4096/rc_pingpong.pcap
[ -f "$cap" ] || cap=$(ls "$SRC"/testbench/golden/6.1/mtu4096/*.pcap | head -1)
cd "$work"

# on_tty CMD: runs CMD with stdin/stdout/stderr on a pseudo-terminal (what
# CMD itself redirects stays redirected); the terminal's output on stdout.
on_tty() { script -qec "$*" /dev/null; }

# simnic pcap: lines to a file, progress on the terminal.
on_tty "'$SIMNIC' pcap '$cap' > pcap.tty.out" > pcap.tty.err
grep -q $'\r\e\\[Ksimnic pcap: [0-9]* packets, 0 bad ICRC, 0 malformed' pcap.tty.err ||
  fail "no progress line from simnic pcap on a terminal: $(od -c pcap.tty.err | head -3)"
[ "$(tail -c 4 pcap.tty.err | od -An -c | tr -d ' ')" = '\r033[K' ] ||
  fail "simnic pcap did not erase its progress line"
"$SIMNIC" pcap "$cap" > pcap.out 2> pcap.err
[ -s pcap.err ] && fail "simnic pcap wrote on a stderr that is not a terminal: $(cat pcap.err)"
cmp -s pcap.out pcap.tty.out || fail "simnic pcap's output differs with progress shown"
on_tty "SIMNIC_NO_PROGRESS=1 '$SIMNIC' pcap '$cap' > /dev/null" > quiet.err
[ -s quiet.err ] && fail "SIMNIC_NO_PROGRESS=1 still showed progress: $(od -c quiet.err | head -2)"
# Lines to the terminal: they are the progress, no more is shown.
on_tty "'$SIMNIC' pcap '$cap'" > lines.tty
grep -q $'\e\\[K' lines.tty && fail "simnic pcap showed progress between lines on the terminal"

# simnic bench --sweep: which run is going on, on the terminal.
on_tty "'$SIMNIC' bench --sweep size=64,128 --messages 200 --csv s.csv --plot s.svg > bench.tty.out" > bench.tty.err
grep -q 'simnic bench: run 1 of 2: size=64' bench.tty.err || fail "no 'run 1 of 2' from the sweep: $(od -c bench.tty.err | head -3)"
grep -q 'simnic bench: run 2 of 2: size=128' bench.tty.err || fail "no 'run 2 of 2' from the sweep"
"$SIMNIC" bench --sweep size=64,128 --messages 200 --csv s2.csv --plot s2.svg > bench.out 2> bench.err
[ -s bench.err ] && fail "simnic bench --sweep wrote on a stderr that is not a terminal: $(cat bench.err)"
[ "$(grep -c '^6[4] \|^128 ' bench.out)" -eq 2 ] || fail "the sweep's table lacks its two rows: $(cat bench.out)"

[ "$failures" -eq 0 ] && { echo "cli.progress: passed"; exit 0; }
echo "cli.progress: $failures checks failed"
exit 1
