#!/usr/bin/env bash
# Command 1 of the README: set up a fresh Debian 12 machine, build, install
# `simnic` onto PATH, and run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
cmake --install build
exec ./scripts/demo-run.sh
