#!/bin/sh
# run_fuzzer.sh LOG FUZZER [ARGS...]
#
# Runs a libFuzzer binary for ctest with its progress lines (one per new
# corpus unit, thousands in a minute) sent to LOG instead of the test's
# output. CI keeps only an excerpt of a failing test's output, and a crash
# report after the progress lines was cut from it; so on success this prints
# the run's final figures, and on failure the report itself: the fuzzer's
# last lines, from the first error line on, which include the crashing input
# (as bytes and base64) and where libFuzzer saved it.
set -u
log=$1
shift
"$@" > "$log" 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then
  grep -E '^(INFO: Seed|Done |stat::)' "$log"
  exit 0
fi
echo "$1 failed (exit $rc); its whole output is in $log. The report:"
first=$(grep -n -m1 -E 'ERROR|runtime error|Assertion|deadly signal' "$log" | cut -d: -f1)
if [ -n "$first" ]; then
  tail -n +"$first" "$log" | head -n 150
else
  tail -n 60 "$log"
fi
exit "$rc"
