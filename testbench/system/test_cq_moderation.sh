#!/usr/bin/env bash
# ibv_modify_cq from an ordinary libibverbs program (cq_moderation_app.cpp)
# on a model device, as an ordinary user (issue 17): the per-CQ moderation
# reaches the model's CQE writer, which holds that CQ's interrupt for its
# period (`simnic stats`: cq.interrupts, cq.interrupt_wake_avg,
# cq.moderated_cqes), while a CQ of the same device without one, or set
# back to none, is not held. The application's own events go out at the
# model's interrupt ("[held]"): a round's event behind the count's CQE,
# or after the period (in wall-clock time too) when no round reaches the
# count, and a CQ destroyed while its event is held takes it along. Then
# the errno cases.
#
#   test_cq_moderation.sh SIMNIC LIBSIMNIC_VERBS PROGRAM
set -u
SIMNIC=$1 LIB=$2 EXE=$3
DEV=cqmod_lo
. "$(dirname "$0")/lib.sh"
sys_init cqmod SIMNIC LIB EXE
export SIMNIC_TEST_DEVICE=$DEV
trap sys_cleanup EXIT

SIMNIC_DEVICE_TYPE=model link_add "$DEV"

# figures CASE LABEL: the program's case CASE alone, the model's figures
# reset first; sets n (cq.interrupts), held (cq.moderated_cqes) and wake
# (cq.interrupt_wake_avg, ns) from the stats after it, and prints them. (In
# this shell, not a $(...) one, so that a failed case counts.)
figures() {
  sim stats "$DEV" --reset >/dev/null || fail "stats --reset"
  "${AS[@]}" timeout 120 "$SIMNIC" exec -- "$EXE" "$1" >"$work/case.txt" 2>&1 ||
    { fail "case $1"; cat "$work/case.txt"; }
  sim stats "$DEV" >"$work/stats.txt" || fail "stats after $1"
  n=$(stat_in "$work/stats.txt" cq.interrupts) held=$(stat_in "$work/stats.txt" cq.moderated_cqes)
  wake=$(stat_in "$work/stats.txt" cq.interrupt_wake_avg)
  echo "$2: cq.interrupts $n, cq.moderated_cqes $held, cq.interrupt_wake_avg $wake ns"
}
# within V LO HI: LO <= V < HI.
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN{exit !(v >= lo && v < hi)}'; }

# 500 us of its own (cq_count 64: one CQE never reaches it): the interrupt
# waits out the period after its CQE.
figures "[own]" "one WRITE, its CQ moderated to 64 CQEs / 500 us"
[ "$n" = 1 ] || fail "one WRITE on an armed CQ: $n interrupts, not 1"
within "$wake" 500000 600000 || fail "a CQ moderated to 500 us woke after $wake ns, not 500 us and a little"

# The same device, a CQ without moderation (the device keys: none): at once.
figures "[none]" "one WRITE, no moderation"
[ "$n" = 1 ] || fail "one WRITE on an armed CQ without moderation: $n interrupts, not 1"
within "$wake" 0 10000 || fail "a CQ without moderation woke after $wake ns"
[ "$held" = 0 ] || fail "CQEs held without moderation"

# Set, then set back to 0/0: at once again.
figures "[reset]" "one WRITE, moderation set back to 0/0"
within "$wake" 0 10000 || fail "a CQ set back to no moderation woke after $wake ns"

# An event count: 64 WRITEs in 8 rounds of 8, one arm per round. The
# application gets one event per round whatever the moderation (the
# program checks it); the model holds each round's interrupt until the
# round's 8th CQE when the CQ's count is 8 (7 CQEs of 8 held, woken within
# microseconds), and for the 500 us period when its count is 16, which no
# round reaches.
figures "[rounds][count]" "rounds of 8, moderated to 8 CQEs / 500 us"
[ "$n" = 8 ] || fail "8 rounds behind one arm each: $n interrupts, not 8"
[ "$held" = 56 ] || fail "a count of 8 met by each round's CQEs: $held CQEs held, not 7 of each 8 (56)"
within "$wake" 0 100000 || fail "a round that meets its count woke after $wake ns"
figures "[rounds][period]" "rounds of 8, moderated to 16 CQEs / 500 us"
[ "$n" = 8 ] || fail "8 rounds, a count no round reaches: $n interrupts, not 8"
within "$wake" 500000 600000 || fail "a count no round reaches: woke after $wake ns, not the 500 us period and a little"
figures "[rounds][plain]" "rounds of 8, no moderation"
[ "$n" = 8 ] || fail "8 rounds without moderation: $n interrupts, not 8"
[ "$held" = 0 ] || fail "CQEs held without moderation"

# The application's events are the model's interrupts (issue 17): the
# program checks what it sees (the first poll after each event finds the
# round's 8 CQEs when the count is 8; each event comes 4 ms or more after
# its round was posted when no round reaches the count, none lost), the
# figures here that the model sent them as it counted them.
figures "[held][count]" "held: rounds of 8, moderated to 8 CQEs / 500 us (the application's events)"
[ "$n" = 8 ] || fail "held, count 8: $n interrupts for 8 events, not 8"
[ "$held" = 56 ] || fail "held, count 8: $held CQEs held, not 56"
grep -q "64 completions, 8 events; at each event the first poll found at least 8;" "$work/case.txt" ||
  { fail "held, count 8: not 8 events each behind its round's 8 CQEs"; cat "$work/case.txt"; }
figures "[held][period]" "held: rounds of 8, moderated to 16 CQEs / 4000 us (the application's events)"
[ "$n" = 8 ] || fail "held, a count no round reaches: $n interrupts for 8 events, not 8"
within "$wake" 4000000 4100000 || fail "held, a count no round reaches: woke after $wake ns"
grep "completions, " "$work/case.txt"
"${AS[@]}" timeout 120 "$SIMNIC" exec -- "$EXE" "[held][late]" >"$work/case.txt" 2>&1 ||
  { fail "a count met by CQEs that come later in wall-clock time"; cat "$work/case.txt"; }
grep "count met later" "$work/case.txt"
"${AS[@]}" timeout 120 "$SIMNIC" exec -- "$EXE" "[held][destroy]" >"$work/case.txt" 2>&1 ||
  { fail "a CQ destroyed while its event is held"; cat "$work/case.txt"; }
sim stats "$DEV" >/dev/null || fail "the device answers after a CQ went with its event held"
# A solicited-only arm: one event, at the solicited SEND, from the model's interrupt.
figures "[solicited]" "solicited: three SENDs, the last solicited, on a CQ armed for solicited completions"
[ "$n" = 1 ] || fail "a solicited-only arm and one solicited SEND: $n interrupts, not 1"

# Bad input: errno as on mlx5.
"${AS[@]}" timeout 120 "$SIMNIC" exec -- "$EXE" "[modify_cq]" >"$work/case.txt" 2>&1 ||
  { fail "ibv_modify_cq errno cases"; cat "$work/case.txt"; }

nothing_left "after the program" qps cqs mrs pds
sys_finish test_cq_moderation
