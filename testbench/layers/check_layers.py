#!/usr/bin/env python3
"""The tree's folders are its layers: no include runs back up.

Every C/C++ source and header of the project is given to the room (top-level
folder, or protocol/roce and protocol/transport) it lives in; every
`#include "simnic/<part>/..."` names the room that provides <part>. A room
may include only itself and rooms below it in LAYERS. Quoted includes
without a `simnic/` prefix are the room's own files or a test kit's of a
lower room, found through the include paths CMake gives; they are resolved
against the tree to find their room.

    check_layers.py SOURCE_DIR        exit 1 and one line per violation
"""
import os
import re
import sys

# Lowest first. Each room may use the rooms before it.
LAYERS = [
    "base",               # utilities with no simnic meaning
    "hwspec",             # the contract: layouts, verbs vocabulary, device tables, codec
    "control",            # the control channel to the daemon
    "protocol/roce",      # the packet core
    "protocol/congestion", # ECN, CNP and DCQCN: the notification and reaction points, the fluid model
    "protocol/transport", # requester, responder, completer
    "soft_engine",        # the soft engine, which owns the timing-model plug
    "rtl_model",          # the cycle model and the RTL, plugged into the engine
    "fw",                 # firmware
    "cm",                 # connection manager
    "daemon",             # the device runtime
    "host_driver",        # the host side of the hardware interface
    "verbs_provider",     # libibverbs/librdmacm for unmodified applications
    "cli",                # the simnic command, its bench and wire
    "testbench",          # tests that cross rooms
]

# Which room provides `#include "simnic/<part>/..."`.
PARTS = {
    "base": "base", "hw": "hwspec", "control": "control", "roce": "protocol/roce", "congestion": "protocol/congestion",
    "transport": "protocol/transport", "soft_engine": "soft_engine", "model": "rtl_model",
    "fw": "fw", "cm": "cm", "daemon": "daemon", "host": "host_driver", "bench": "cli", "wire": "cli",
}

SOURCE_EXT = (".h", ".hpp", ".cc", ".cpp", ".c")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room_of(rel):
    for r in sorted(LAYERS, key=len, reverse=True):
        if rel == r or rel.startswith(r + "/"):
            return r
    return None


def main():
    src = os.path.abspath(sys.argv[1])
    rank = {r: i for i, r in enumerate(LAYERS)}
    # Every file by its base name, for quoted includes without simnic/.
    by_name = {}
    files = []
    for top in LAYERS:
        for d, dirs, names in os.walk(os.path.join(src, top)):
            dirs[:] = [x for x in dirs if not x.startswith("build")]
            for n in names:
                if n.endswith(SOURCE_EXT):
                    rel = os.path.relpath(os.path.join(d, n), src)
                    files.append(rel)
                    by_name.setdefault(n, set()).add(room_of(rel))
    bad = []
    checked = 0
    for rel in files:
        me = room_of(rel)
        with open(os.path.join(src, rel), errors="replace") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            checked += 1
            parts = inc.split("/")
            if parts[0] == "simnic" and len(parts) > 2:
                owner = PARTS.get(parts[1])
                if owner is None:
                    bad.append(f"{rel}: includes {inc}: no room provides simnic/{parts[1]}/")
                    continue
                owners = {owner}
            else:
                owners = by_name.get(os.path.basename(inc), set())
                if not owners:
                    continue  # generated (Verilator, the parser package) or a system header
            # A name several rooms hold resolves to the nearest one at or below.
            ok = [o for o in owners if rank[o] <= rank[me]]
            if not ok:
                up = min(owners, key=lambda o: rank[o])
                bad.append(f"{rel} ({me}) includes {inc} from {up}, a room above it")
    for b in bad:
        print(b)
    print(f"{len(files)} files, {checked} includes checked, {len(bad)} running back up a layer")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
