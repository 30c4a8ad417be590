#!/usr/bin/env bash
# Regenerate the golden captures (testbench/golden/<kernel>/mtu*/, MANIFEST.tsv)
# with the kernel-rxe rig, by hand (it boots VMs; CI only reads the captures).
# Needs what `testbench/rig/simnic-rig setup` needs, and simnic for the rig's
# wire (build/cli/simnic, or --simnic PATH, or $SIMNIC).
# Usage: testbench/golden/regenerate.sh [--kernel 6.1,6.12] [--only CASE,...]
#                                       [--mtu 1500,9000] [--simnic PATH]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/regenerate.py" "$@"
