#!/bin/sh
# The soft device does not link SystemC: the program linking only the soft
# engine (link_check.cpp) needs no SystemC library and carries no SystemC or
# Verilator symbol, and it runs.
#   test_link.sh LINK_CHECK_BINARY
set -u
bin=$1
fail=0
needed=$(readelf -d "$bin" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p')
if echo "$needed" | grep -Eiq 'systemc|verilat'; then
  echo "FAIL: the soft engine pulls in: $(echo "$needed" | grep -Ei 'systemc|verilat')"; fail=1
fi
syms=$(nm -C "$bin" | grep -E ' (sc_core|sc_dt|Verilated|VerilatedContext)::' | head -5)
if [ -n "$syms" ]; then echo "FAIL: SystemC/Verilator symbols in the soft engine: $syms"; fail=1; fi
out=$("$bin") || { echo "FAIL: $bin: $out"; fail=1; }
[ "$fail" -eq 0 ] && echo "soft engine links without SystemC: $(echo $needed)"
exit "$fail"
