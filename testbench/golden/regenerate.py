#!/usr/bin/env python3
"""Regenerates simnic's golden captures: kernel rxe <-> kernel rxe traffic
between two VMs of the rig (testbench/rig/simnic-rig), recorded on the rig's
wire, for each reference kernel (6.1, 6.12) at IB MTU 1024 (netdev MTU 1500)
and IB MTU 4096 (netdev MTU 9000).

Every case runs a server in vm0 (10.0.0.1) and a client in vm1 (10.0.0.2);
the frames the wire carried meanwhile (IPv4 and ARP only: the VMs' IPv6
router solicitations are left out) become <kernel>/mtu<ib mtu>/<case>.pcap,
and MANIFEST.tsv gets a line per capture. The rig's wire is `simnic wire`:
pass --simnic, set $SIMNIC, or build build/cli/simnic first.

usage: regenerate.py [--out DIR] [--kernel 6.1,6.12] [--only CASE,...]
                     [--mtu 1500,9000] [--simnic PATH]
Takes a few minutes per kernel (two rig boots and ~20 short runs under TCG).
By hand only: CI reads the committed captures.
"""

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))
RIG = os.path.join(HERE, "..", "rig", "simnic-rig")
SERVER_IP = "10.0.0.1"

# (case, server command, client command, how to wait for the server:
#  ("tcp", port), ("proc", name) or ("none", "") [, "client fails": the
#  client must exit non-zero; "server stays": the server serves until it is
#  stopped, once the client is done]). {ip} is the server's IP; {mtu} the IB MTU in
# bytes; {sizes} the write-with-immediate sizes for this MTU.
PERF = "-d rxe0 -x 1 -F"
CASES = [
    ("rc_pingpong", "ibv_rc_pingpong -g 1 -m {mtu} -n 4",
     "ibv_rc_pingpong -g 1 -m {mtu} -n 4 {ip}", ("tcp", 18515)),
    ("rc_pingpong_s10000", "ibv_rc_pingpong -g 1 -m {mtu} -n 3 -s 10000",
     "ibv_rc_pingpong -g 1 -m {mtu} -n 3 -s 10000 {ip}", ("tcp", 18515)),
    ("rc_pingpong_s1", "ibv_rc_pingpong -g 1 -m {mtu} -n 3 -s 1",
     "ibv_rc_pingpong -g 1 -m {mtu} -n 3 -s 1 {ip}", ("tcp", 18515)),
    ("uc_pingpong", "ibv_uc_pingpong -g 1 -m {mtu} -n 4",
     "ibv_uc_pingpong -g 1 -m {mtu} -n 4 {ip}", ("tcp", 18515)),
    ("ud_pingpong", "ibv_ud_pingpong -g 1 -n 4 -s {mtu}",
     "ibv_ud_pingpong -g 1 -n 4 -s {mtu} {ip}", ("tcp", 18515)),
    # From here on both sides first burn QPNs, so the QPs get large numbers
    # (rxe hands them out cyclically) and the UDP source port folding of
    # large QPN products shows on the wire.
    ("write_imm", "simnic-write-imm -b 2000 -s {sizes}",
     "simnic-write-imm -b 700 -s {sizes} {ip}", ("tcp", 18517)),
    ("send_bw", f"ib_send_bw {PERF} -n 8 -s 4096",
     f"ib_send_bw {PERF} -n 8 -s 4096 {{ip}}", ("tcp", 18515)),
    ("write_bw", f"ib_write_bw {PERF} -n 8 -s 8192",
     f"ib_write_bw {PERF} -n 8 -s 8192 {{ip}}", ("tcp", 18515)),
    ("read_bw", f"ib_read_bw {PERF} -n 8 -s 8192",
     f"ib_read_bw {PERF} -n 8 -s 8192 {{ip}}", ("tcp", 18515)),
    ("atomic_cmp_swap", f"ib_atomic_bw {PERF} -n 16 -A CMP_AND_SWAP",
     f"ib_atomic_bw {PERF} -n 16 -A CMP_AND_SWAP {{ip}}", ("tcp", 18515)),
    ("atomic_fetch_add", f"ib_atomic_bw {PERF} -n 16 -A FETCH_AND_ADD",
     f"ib_atomic_bw {PERF} -n 16 -A FETCH_AND_ADD {{ip}}", ("tcp", 18515)),
    ("rping", "rping -s -a {ip} -C 3 -S 100 -v",
     "rping -c -a {ip} -C 3 -S 100 -v", ("proc", "rping")),
    # The rdmacm-utils tools whose CM MADs simnic's CM is compared with
    # (testbench/system/cm_compare.cpp): RC connections through the
    # asynchronous API (ucmatose, two at once; cmtime, four) and the
    # synchronous one (rdma_server/rdma_client), UD service ID resolution
    # (udaddy: SIDR_REQ/SIDR_REP), and the two refusals of a peer with no
    # listener (a REJ to a REQ, a SIDR_REP "unsupported" to a SIDR_REQ),
    # whose clients fail by design.
    ("ucmatose", "ucmatose -b {ip} -c 2 -C 4", "ucmatose -s {ip} -c 2 -C 4",
     ("proc", "ucmatose")),
    ("cmtime", "cmtime -b {ip} -c 4", "cmtime -s {ip} -c 4", ("proc", "cmtime"), "server stays"),
    ("rdma_client", "rdma_server -s {ip}", "rdma_client -s {ip}", ("proc", "rdma_server")),
    ("udaddy", "udaddy -b {ip} -c 2 -C 4", "udaddy -s {ip} -c 2 -C 4", ("proc", "udaddy")),
    ("cm_reject", "true", "rping -c -a {ip} -p 7999 -C 1", ("none", ""), "client fails"),
    ("sidr_reject", "true", "udaddy -s {ip} -c 1 -C 1", ("none", ""), "client fails"),
]
IB_MTU = {1500: 1024, 9000: 4096}
KERNELS = ("6.1", "6.12")


def rig(state, *args, timeout=120, check=True):
    argv = [sys.executable, RIG, "--state", state] + [str(a) for a in args]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"simnic-rig {' '.join(map(str, args))}: rc {r.returncode}\n"
                           f"{r.stdout}\n{r.stderr}")
    return r


def read_records(path):
    recs = []
    with open(path, "rb") as f:
        f.read(24)
        while True:
            h = f.read(16)
            if len(h) < 16:
                break
            sec, usec, n, _ = struct.unpack("<IIII", h)
            d = f.read(n)
            if len(d) < n:
                break
            recs.append((sec, usec, d))
    return recs


def write_records(path, recs):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for sec, usec, d in recs:
            f.write(struct.pack("<IIII", sec, usec, len(d), len(d)))
            f.write(d)


def keep(frame):
    return frame[12:14] in (b"\x08\x00", b"\x08\x06")


def is_roce(frame):
    if frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return False
    udp = 14 + (frame[14] & 15) * 4
    return struct.unpack(">H", frame[udp + 2:udp + 4])[0] == 4791


def wait_server(state, how):
    kind, what = how
    if kind == "none":
        return
    if kind == "tcp":
        cmd = (f"i=0; while [ $i -lt 400 ]; do netstat -ltn 2>/dev/null | grep -q ':{what} ' "
               f"&& exit 0; i=$((i+1)); sleep 0.05; done; exit 1")
        rig(state, "exec", "--timeout", 40, 0, cmd)
    else:
        cmd = (f"i=0; while [ $i -lt 400 ]; do pidof {what} >/dev/null && exit 0; "
               f"i=$((i+1)); sleep 0.05; done; exit 1")
        rig(state, "exec", "--timeout", 40, 0, cmd)
        time.sleep(2.0)  # rdma_listen follows soon after the process starts


def run_case(state, pcap, case, scmd, ccmd, how, client_fails=False, server_stays=False):
    before = len(read_records(pcap))
    server = subprocess.Popen([sys.executable, RIG, "--state", state, "exec", "--timeout", "120",
                               "0", scmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        wait_server(state, how)
        client = rig(state, "exec", "--timeout", 120, 1, ccmd, timeout=180, check=False)
        if server_stays and client.returncode == 0:
            rig(state, "exec", 0, f"kill $(pidof {scmd.split()[0]})")
        sout, _ = server.communicate(timeout=150)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    if (client.returncode == 0) == client_fails or (server.returncode != 0 and not server_stays):
        raise RuntimeError(f"{case}: client rc {client.returncode}, server rc "
                           f"{server.returncode}\n--- client\n{client.stdout}{client.stderr}"
                           f"\n--- server\n{sout}")
    time.sleep(0.5)  # let the last frames (ACKs, FIN) reach the capture
    recs = read_records(pcap)[before:]
    return [r for r in recs if keep(r[2])], client.stdout + sout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--only", help="comma-separated case names")
    ap.add_argument("--mtu", default="1500,9000", help="netdev MTUs")
    ap.add_argument("--kernel", default=",".join(KERNELS), help="reference kernels")
    ap.add_argument("--simnic", help="the simnic executable for the rig's wire")
    a = ap.parse_args()
    if a.simnic:
        os.environ["SIMNIC"] = os.path.abspath(a.simnic)
    elif not os.environ.get("SIMNIC"):
        built = os.path.join(HERE, "..", "..", "build", "cli", "simnic")
        if os.path.exists(built):
            os.environ["SIMNIC"] = os.path.realpath(built)
    kernels = a.kernel.split(",")
    for k in kernels:
        if k not in KERNELS:
            ap.error(f"--kernel {k}: one of {', '.join(KERNELS)}")
    only = set(a.only.split(",")) if a.only else None
    manifest = os.path.join(a.out, "MANIFEST.tsv")
    rows = {}
    if os.path.exists(manifest):
        for line in open(manifest):
            if line.startswith("#") or not line.strip():
                continue
            rows[line.split("\t")[0]] = line.rstrip("\n")

    for kernel, netdev_mtu in [(k, int(m)) for k in kernels for m in a.mtu.split(",")]:
        ib_mtu = IB_MTU[netdev_mtu]
        sub = f"{kernel}/mtu{ib_mtu}"
        os.makedirs(os.path.join(a.out, sub), exist_ok=True)
        state = tempfile.mkdtemp(prefix=f"simnic-golden-{kernel}-{ib_mtu}-")
        try:
            print(f"== kernel {kernel}, netdev MTU {netdev_mtu}: booting two VMs", flush=True)
            rig(state, "start", "--kernel", kernel, "--vms", 2, "--mtu", netdev_mtu,
                "--lifetime", 1500, timeout=400)
            uname = rig(state, "exec", 0, "uname -r").stdout.strip()
            kv = re.search(r"Debian (\S+)", rig(state, "exec", 0, "uname -v").stdout)
            if kv:
                uname += f" (Debian {kv.group(1)})"
            for vm in (0, 1):
                info = rig(state, "exec", vm, "ibv_devinfo -d rxe0").stdout
                m = re.search(r"active_mtu:\s+(\d+)", info)
                if not m or int(m.group(1)) != ib_mtu:
                    raise RuntimeError(f"vm{vm}: active_mtu {m and m.group(1)}, wanted {ib_mtu}")
            pcap = rig(state, "pcap").stdout.strip()
            sizes = "64,3000,0" if ib_mtu == 1024 else "64,10000,0"
            for case, scmd, ccmd, how, *expect in CASES:
                if only and case not in only:
                    continue
                fmt = dict(ip=SERVER_IP, mtu=ib_mtu, sizes=sizes)
                scmd_f, ccmd_f = scmd.format(**fmt), ccmd.format(**fmt)
                t0 = time.monotonic()
                recs, out = run_case(state, pcap, case, scmd_f, ccmd_f, how,
                                     client_fails="client fails" in expect,
                                     server_stays="server stays" in expect)
                rel = f"{sub}/{case}.pcap"
                write_records(os.path.join(a.out, rel), recs)
                nroce = sum(1 for r in recs if is_roce(r[2]))
                print(f"{rel}: {len(recs)} frames, {nroce} RoCE "
                      f"({time.monotonic() - t0:.1f} s)", flush=True)
                rows[rel] = "\t".join([rel, str(ib_mtu), str(netdev_mtu), uname,
                                       f"vm0: {scmd_f}", f"vm1: {ccmd_f}",
                                       str(len(recs)), str(nroce)])
        finally:
            rig(state, "stop", check=False)
            shutil.rmtree(state, ignore_errors=True)
        with open(manifest, "w") as f:
            f.write("# file\tib_mtu\tnetdev_mtu\trxe_kernel(uname -r)\tserver (10.0.0.1)\t"
                    "client (10.0.0.2)\tframes\troce_frames\n")
            for k in sorted(rows):
                f.write(rows[k] + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
