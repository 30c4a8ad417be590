#!/usr/bin/env bash
# Regenerate the golden captures (testbench/golden/mtu*/, MANIFEST.tsv) with
# the kernel-rxe rig. Needs what `testbench/rig/simnic-rig setup` needs.
# Usage: testbench/golden/regenerate.sh [--only CASE,...] [--mtu 1500,9000]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/regenerate.py" "$@"
