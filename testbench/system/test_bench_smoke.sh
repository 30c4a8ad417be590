#!/usr/bin/env bash
# scripts/bench-soft.sh --quick runs and prints every row of issue 14's table
# with a figure and a verdict, every limit with a number, the scaling curve
# with a ratio at each point, and the same rows in its CSV. It asserts
# nothing about speed: the figures are whatever this machine gives now.
#   test_bench_smoke.sh SCRIPT SIMNIC LIBSIMNIC_VERBS SIMNIC_BENCH_LIMITS
set -u
SCRIPT=$1
export SIMNIC=$2 SIMNIC_VERBS_LIB=$3 SIMNIC_BENCH_LIMITS=$4
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
csv=$(mktemp /tmp/bench-smoke.XXXXXX.csv)
trap 'rm -f "$csv"' EXIT
# A bad --repeat is refused before anything runs.
bad=$("$SCRIPT" --quick --repeat 0 2>&1)
[ $? -eq 2 ] && grep -q -- "--repeat takes a whole number" <<<"$bad" || fail "--repeat 0: $bad"
out=$("$SCRIPT" --quick --repeat 2 --csv "$csv" 2>&1) || fail "bench-soft.sh exited with $?"
echo "$out"
for l in "busy-polling: half round trip" "blocking: half round trip" "UDP one way over lo" "memcpy, one thread"; do
  grep -E "$l.* [0-9.]+ (us|Gb/s) " <<<"$out" >/dev/null || fail "no figure for the limit '$l'"
done
rows=("ib_send_lat -s 2, typical" "ib_read_lat -s 2, typical" "ib_send_lat -s 2 -e, typical"
      "ibv_rc_pingpong -s 64 -e, half RTT" "ib_write_bw -s 65536  " "ib_send_bw -s 65536" "ib_read_bw -s 65536"
      "ibv_rc_pingpong -g 1 \(4 KiB\)" "ib_write_bw -s 65536 -q 2" "ib_write_bw -s 65536 -q 4"
      "ib_write_bw -s 65536 -q 8" "ib_write_bw, 2 pairs at once \(sum\)" "ib_write_bw, 4 pairs at once \(sum\)")
for set in soft loopback; do
  for r in "${rows[@]}"; do
    grep -E "^$r +$set +[0-9.]+ .*(PASS|MISS)$" <<<"$out" >/dev/null || fail "row '$r' on $set: no figure and verdict"
  done
done
for r in "idle device, daemon CPU +soft" "ib_send_lat -s 2, typical +model" "ib_write_bw -s 65536 \(MTU 4096\) +model" \
         "simnic bench, RTL parser \+ ICRC +model"; do
  grep -E "^$r +[0-9.]+ .*(PASS|MISS)$" <<<"$out" >/dev/null || fail "row '$r': no figure and verdict"
done
grep -E "^ib_write_bw -s 65536 \(MTU 1024\) +model +(- +skipped|[0-9.]+ .*(PASS|MISS)$)" <<<"$out" >/dev/null ||
  fail "row 'MTU 1024' on model: neither skipped nor a figure and verdict"
grep -E "^[0-9]+ PASS, [0-9]+ MISS" <<<"$out" >/dev/null || fail "no summary line"
# The scaling curve: every point a figure and its ratio to one QP of one
# pair, and each pair's own figure (two and four of them).
p='[0-9.]+ \([0-9.]+x\)'
for set in soft loopback; do
  grep -E "^  $set +QPs of one pair +1: [0-9.]+ +2: $p +4: $p +8: $p$" <<<"$out" >/dev/null ||
    fail "scaling curve over QPs on $set: a point without a figure and ratio"
  grep -E "^  $set +pairs at once +1: [0-9.]+ +2: $p +4: $p$" <<<"$out" >/dev/null ||
    fail "scaling curve over pairs on $set: a point without a figure and ratio"
  grep -E "^  $set +each pair +2: [0-9.]+ [0-9.]+ +4: [0-9.]+ [0-9.]+ [0-9.]+ [0-9.]+$" <<<"$out" >/dev/null ||
    fail "scaling curve on $set: not every pair's own figure"
  # --repeat 2: each point's two runs, its figure their median.
  r='[0-9.]+ [0-9.]+'
  line=$(grep -E "^  $set +runs \(median above\) QPs 1: $r; 2: $r; 4: $r; 8: $r; pairs 2: $r; 4: $r$" <<<"$out") ||
    fail "scaling curve on $set: not two runs of every point"
  one=$(sed -n "s/^  $set  *QPs of one pair  *1: \([0-9.]*\) .*/\1/p" <<<"$out")
  read -r a b < <(sed -n 's/.*QPs 1: \([0-9.]*\) \([0-9.]*\);.*/\1 \2/p' <<<"$line")
  awk -v m="$one" -v a="${a:-x}" -v b="${b:-x}" 'BEGIN {exit !(m + 0 > 0 && (m - (a + b) / 2) ^ 2 < 0.0001)}' ||
    fail "scaling curve on $set: one QP reads $one, not the median of its runs $a and $b"
done
# --csv: a header, then the table's rows, one line each, in its order.
table=$(grep -cE ' (PASS|MISS|NO FIGURE|NO LIMIT)$' <<<"$out")
[ "$(head -1 "$csv")" = "what,device,figure,unit,limit,limit_value,ratio,target,result" ] || fail "--csv: no header"
[ "$(($(wc -l <"$csv") - 1))" -eq "$table" ] || fail "--csv: $(($(wc -l <"$csv") - 1)) rows, the table $table"
grep -qE '^"ib_write_bw, 4 pairs at once \(sum\)","loopback","[0-9.]+","Gb/s",' "$csv" || fail "--csv: no 4-pair loopback row"
[ "$failures" -eq 0 ] || { echo "bench.smoke: $failures checks failed"; exit 1; }
echo "bench.smoke: passed"
