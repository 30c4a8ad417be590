#!/usr/bin/env python3
"""The rig's own tests (ctest label `rig`): each boots what it needs in a
state directory of its own, and leaves no process behind, pass or fail.

usage: rig_tests.py [--rig PATH] [--simnic EXE --verbs LIB --wire-check PY] TEST
tests: pingpong, exec_timeout, port_in_use, boot_timeout, rxe_loopback, wire_rping
"""

import argparse
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))


class Fail(Exception):
    pass


class Rig:
    def __init__(self, rig, name):
        self.rig = rig
        self.state = tempfile.mkdtemp(prefix=f"simnic-rig-{name}-")

    def cmd(self, *args, timeout=300, check=None):
        argv = [sys.executable, self.rig, "--state", self.state] + [str(a) for a in args]
        t0 = time.monotonic()
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
        r.seconds = time.monotonic() - t0
        if check is not None and r.returncode != check:
            raise Fail(f"`simnic-rig {' '.join(map(str, args))}` gave {r.returncode}, "
                       f"wanted {check}\nstdout: {r.stdout}\nstderr: {r.stderr}")
        return r

    def popen(self, *args):
        argv = [sys.executable, self.rig, "--state", self.state] + [str(a) for a in args]
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def stray(self):
        """Processes (other than us) whose command line names our state dir."""
        found = []
        me = os.getpid()
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == me:
                continue
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    cl = f.read()
                with open(f"/proc/{d}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if self.state.encode() in cl and state != "Z":
                found.append((int(d), cl.replace(b"\0", b" ").decode(errors="replace")[:120]))
        return found

    def kill_stray(self):
        for pid, _ in self.stray():
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def assert_clean(self, what):
        left = self.stray()
        if left:
            raise Fail(f"processes left after {what}: {left}")
        if os.path.exists(os.path.join(self.state, "state.json")):
            raise Fail(f"state.json left after {what}")

    def dump(self):
        for f in sorted(os.listdir(self.state)):
            if f.endswith((".console", ".log")):
                p = os.path.join(self.state, f)
                with open(p, "rb") as fh:
                    text = fh.read()[-3000:].decode(errors="replace")
                print(f"--- {f} (tail)\n{text}")

    def cleanup(self, ok):
        self.cmd("stop", timeout=60)
        self.kill_stray()
        if not ok:
            self.dump()
        shutil.rmtree(self.state, ignore_errors=True)


def roce_frames(pcap):
    """(src ip, dst ip, bth opcode) of every RoCE v2 frame in an Ethernet pcap."""
    out = []
    with open(pcap, "rb") as f:
        f.read(24)
        while True:
            h = f.read(16)
            if len(h) < 16:
                break
            n = struct.unpack("<IIII", h)[2]
            d = f.read(n)
            if len(d) < 42 or d[12:14] != b"\x08\x00" or d[23] != 17:
                continue
            ihl = (d[14] & 15) * 4
            udp = 14 + ihl
            if struct.unpack(">H", d[udp + 2:udp + 4])[0] != 4791:
                continue
            out.append((socket.inet_ntoa(d[26:30]), socket.inet_ntoa(d[30:34]), d[udp + 8]))
    return out


def test_pingpong(rig):
    t0 = time.monotonic()
    r = rig.cmd("start", "--vms", 2, "--lifetime", 400, check=0)
    print(f"start: {r.seconds:.1f} s\n{r.stderr}")
    iters = 20
    server = rig.popen("exec", "--timeout", 60, 0, f"ibv_rc_pingpong -g 1 -n {iters} -s 3000")
    try:
        client = None
        for attempt in range(40):
            client = rig.cmd("exec", "--timeout", 60, 1,
                             f"ibv_rc_pingpong -g 1 -n {iters} -s 3000 10.0.0.1")
            if client.returncode == 0 or "Couldn't connect" not in client.stdout + client.stderr:
                break
            time.sleep(0.5)  # the server is not listening yet
        print(f"client: rc {client.returncode}\n{client.stdout}{client.stderr}")
        if client.returncode != 0:
            raise Fail("ibv_rc_pingpong client failed")
        sout, _ = server.communicate(timeout=90)
        print(f"server: rc {server.returncode}\n{sout}")
        if server.returncode != 0:
            raise Fail("ibv_rc_pingpong server failed")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    pcap = rig.cmd("pcap", check=0).stdout.strip()
    time.sleep(0.5)
    frames = roce_frames(pcap)
    a2b = [f for f in frames if f[0] == "10.0.0.1" and f[1] == "10.0.0.2"]
    b2a = [f for f in frames if f[0] == "10.0.0.2" and f[1] == "10.0.0.1"]
    print(f"wire: {len(frames)} RoCE frames ({len(a2b)} vm0->vm1, {len(b2a)} vm1->vm0)")
    # 3000-byte SENDs at IB MTU 1024 are 3 packets each way per iteration.
    if len(a2b) < 3 * iters or len(b2a) < 3 * iters:
        raise Fail("the wire capture lacks the pingpong's RoCE frames")
    opcodes = {f[2] for f in frames}
    for op, name in ((0x00, "RC SEND_FIRST"), (0x02, "RC SEND_LAST"), (0x11, "RC ACK")):
        if op not in opcodes:
            raise Fail(f"no {name} on the wire (opcodes seen: {sorted(opcodes)})")
    rig.cmd("stop", check=0)
    rig.assert_clean("stop")
    print(f"pingpong test wall time {time.monotonic() - t0:.1f} s")


def test_exec_timeout(rig):
    rig.cmd("start", "--vms", 1, "--lifetime", 300, check=0)
    r = rig.cmd("exec", 0, "echo out; echo err >&2; exit 7", check=7)
    if "out" not in r.stdout or "err" not in r.stdout:
        raise Fail(f"exec output not returned: {r.stdout!r}")
    r = rig.cmd("exec", 0, "printf", "%s|", "a b", "c", check=0)
    if r.stdout != "a b|c|":
        raise Fail(f"exec argument quoting broken: {r.stdout!r}")
    # A command that hangs (with a child that hangs too) is killed whole.
    r = rig.cmd("exec", "--timeout", 3, 0, "echo started; sleep 1000 & sleep 1000", check=124)
    if r.seconds > 20 or "timed out" not in r.stderr or "started" not in r.stdout:
        raise Fail(f"timeout not reported cleanly ({r.seconds:.1f} s): {r.stdout!r} {r.stderr!r}")
    # The VM stays usable, and the hung processes are gone.
    r = rig.cmd("exec", 0, "ps | grep -c '[s]leep 1000' || true", check=0)
    if r.stdout.strip() != "0":
        raise Fail(f"timed-out processes still running in the VM: {r.stdout!r}")
    r = rig.cmd("exec", 0, "kill -9 $$", check=137)
    r = rig.cmd("exec", "vm0", "ibv_devinfo -d rxe0 | grep -c PORT_ACTIVE", check=0)
    # exec against a VM that does not exist, and against a killed VM.
    r = rig.cmd("exec", 5, "true", check=255)
    if "no vm5" not in r.stderr:
        raise Fail(f"bad error for a missing VM: {r.stderr!r}")
    import json
    st = json.load(open(os.path.join(rig.state, "state.json")))
    os.killpg(st["vms"][0]["pid"], signal.SIGKILL)
    time.sleep(0.5)
    r = rig.cmd("exec", 0, "true", check=255)
    if "not running" not in r.stderr:
        raise Fail(f"bad error for a dead VM: {r.stderr!r}")
    rig.cmd("stop", check=0)
    rig.assert_clean("stop")


def test_port_in_use(rig):
    # Hold a UDP port, and ask the rig to put its wire (then a VM) there.
    for which in ("wire", "vm0"):
        while True:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            base = port if which == "wire" else port - 1
            probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                probe.bind(("127.0.0.1", port + 1 if which == "wire" else port - 1))
                break
            except OSError:
                s.close()
            finally:
                probe.close()
        try:
            r = rig.cmd("start", "--vms", 1, "--base-port", base, check=255)
        finally:
            s.close()
        if "already in use" not in r.stderr or f"for {which}" not in r.stderr:
            raise Fail(f"unclear error for a busy {which} port: {r.stderr!r}")
        print(f"busy {which} port: {r.stderr.strip()}")
        rig.assert_clean(f"a busy {which} port")
    # A rig that is already running refuses a second start in the same state dir.
    rig.cmd("start", "--vms", 1, "--lifetime", 200, check=0)
    r = rig.cmd("start", "--vms", 1, check=255)
    if "already running" not in r.stderr:
        raise Fail(f"unclear error for a second start: {r.stderr!r}")
    rig.cmd("stop", check=0)
    rig.assert_clean("stop")


def test_boot_timeout(rig):
    r = rig.cmd("start", "--vms", 2, "--boot-timeout", 2, check=255)
    if "did not boot within" not in r.stderr:
        raise Fail(f"unclear boot-timeout error: {r.stderr!r}")
    print(r.stderr.strip().splitlines()[0])
    rig.assert_clean("a boot timeout")


def test_rxe_loopback(rig):
    """Kernel rxe short-cuts traffic between QPs of one device: when the
    destination MAC is the netdev's own (every peer on lo, or the device's own
    address on eth0), rxe hands the packet from its TX straight to its RX and
    the netdev never sees it (rxe_net.c: RXE_LOOPBACK_MASK). simnic's
    `loopback on` is that path; its default sends through the netdev, so that
    tcpdump sees the traffic. Also: the pingpong without -g (no GRH) fails,
    as the README says. This test keeps both premises checked."""
    rig.cmd("start", "--vms", 1, "--lifetime", 300, check=0)
    iters = 200
    script = (
        "rdma link add rxe_lo type rxe netdev lo || exit 1; "
        "c() { cat /sys/class/net/$1/statistics/tx_packets; }; "
        "for d in rxe_lo:lo:127.0.0.1 rxe0:eth0:10.0.0.1; do "
        "  dev=${d%%:*}; rest=${d#*:}; nd=${rest%%:*}; ip=${rest#*:}; "
        "  before=$(c $nd); "
        f"  ibv_rc_pingpong -d $dev -g 1 -n {iters} >/tmp/srv.$dev 2>&1 & "
        "  sleep 1; "
        f"  ibv_rc_pingpong -d $dev -g 1 -n {iters} $ip >/tmp/cli.$dev 2>&1 || {{ cat /tmp/cli.$dev; exit 1; }}; "
        "  wait $! || { cat /tmp/srv.$dev; exit 1; }; "
        "  grep -q 'iters in' /tmp/cli.$dev || exit 1; "
        "  echo \"$dev $nd $(( $(c $nd) - before ))\"; "
        "done; "
        # The tutorial (4.5) runs the pingpong without -g: no GRH, which a
        # RoCE QP cannot do without; rxe refuses it (simnic too).
        "ibv_rc_pingpong -d rxe_lo -n 10 >/tmp/srv.nogrh 2>&1 & "
        "sleep 1; ibv_rc_pingpong -d rxe_lo -n 10 127.0.0.1 >/tmp/cli.nogrh 2>&1; crc=$?; "
        "wait $!; src=$?; echo \"nogrh $crc $src\"; cat /tmp/srv.nogrh")
    r = rig.cmd("exec", "--timeout", 200, 0, script, timeout=260)
    print(f"rc {r.returncode}\n{r.stdout}{r.stderr}")
    if r.returncode != 0:
        raise Fail("ibv_rc_pingpong on one kernel rxe device failed")
    sent = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[0] in ("rxe_lo", "rxe0") and f[2].isdigit():
            sent[f[0]] = int(f[2])
    if set(sent) != {"rxe_lo", "rxe0"}:
        raise Fail(f"no packet counts in the output: {r.stdout!r}")
    # Each iteration is at least a SEND and an ACK each way: 4 * iters RoCE
    # packets. Only the pingpong's TCP exchange (a few dozen) may show.
    for dev, n in sent.items():
        print(f"{dev}: the netdev sent {n} packets for {4 * iters}+ RoCE packets")
        if n >= iters:
            raise Fail(f"{dev}: the netdev sent {n} packets: rxe did not short-cut its own traffic")
    nogrh = [l.split() for l in r.stdout.splitlines() if l.startswith("nogrh ")]
    if not nogrh or nogrh[0][1] == "0" or nogrh[0][2] == "0" or "Couldn't connect to remote QP" not in r.stdout:
        raise Fail(f"ibv_rc_pingpong without -g should fail on kernel rxe: {nogrh}")
    frames = roce_frames(rig.cmd("pcap", check=0).stdout.strip())
    if frames:
        raise Fail(f"{len(frames)} RoCE frames on the wire from a device talking to itself")
    rig.cmd("stop", check=0)
    rig.assert_clean("stop")


# Paths the simnic tests need (--simnic, --verbs, --wire-check).
TOOLS = argparse.Namespace(simnic=None, verbs=None, wire_check=None)


def test_wire_rping(rig):
    """A simnic device on the rig's wire talks to the VM's kernel rxe (issue
    10, section 1): `simnic link add ... wire 127.0.0.1:PORT addr
    10.0.0.100/24` joins the wire as a NIC of its own, and rping -C 10 -V
    runs between it and the VM, simnic as client and then as server. The host
    has no route to 10.0.0.0/24: the CM finds the device by its subnet, and
    the device and rxe resolve each other with ARP. The wire's capture (both
    kernels' frames and simnic's) follows rxe's rules (wire_check.py)."""
    if not (TOOLS.simnic and TOOLS.verbs and TOOLS.wire_check):
        raise Fail("wire_rping needs --simnic, --verbs and --wire-check")
    rig.cmd("start", "--vms", 1, "--lifetime", 400, check=0)
    st = json.loads(rig.cmd("status", check=0).stdout)
    port = st["wire"]["port"]
    rt = tempfile.mkdtemp(prefix="simnic-rig-rt-")
    os.chmod(rt, 0o700)
    env = dict(os.environ, SIMNIC_RUNTIME_DIR=rt)
    app_env = dict(env, LD_PRELOAD=TOOLS.verbs)

    def sim(*args):
        r = subprocess.run([TOOLS.simnic] + [str(a) for a in args], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        if r.returncode != 0:
            raise Fail(f"simnic {' '.join(map(str, args))}: {r.stdout}")
        return r.stdout

    def pings(out):
        return [l for l in out.splitlines() if l.startswith("ping data: rdma-ping-")]

    server = None
    try:
        sim("link", "add", "rs0", "type", "soft", "wire", f"127.0.0.1:{port}", "addr", "10.0.0.100/24")
        print(sim("link", "show").strip())
        # 1. rxe serves, simnic is the client.
        server = rig.popen("exec", "--timeout", 150, 0, "rping -s -a 10.0.0.1 -p 7174 -C 10 -V")
        client = None
        for _ in range(30):
            client = subprocess.run(["timeout", "120", "rping", "-c", "-a", "10.0.0.1", "-p", "7174", "-C", "10",
                                     "-V", "-v"], env=app_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, timeout=150)
            if "RDMA_CM_EVENT_REJECTED" not in client.stdout:
                break
            time.sleep(1)  # the server does not listen yet
        sout, _ = server.communicate(timeout=150)
        print(f"simnic client: rc {client.returncode}\n{client.stdout}rxe server: rc {server.returncode}\n{sout}")
        if client.returncode != 0 or len(pings(client.stdout)) != 10:
            raise Fail("rping from simnic to kernel rxe failed")
        if server.returncode != 0:
            raise Fail("kernel rxe's rping server failed")
        # 2. simnic serves, rxe is the client.
        server = subprocess.Popen(["timeout", "150", "rping", "-s", "-a", "10.0.0.100", "-p", "7175", "-C", "10",
                                   "-V"], env=app_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1)
        client = rig.cmd("exec", "--timeout", 120, 0, "rping -c -a 10.0.0.100 -p 7175 -C 10 -V -v", timeout=150)
        sout, _ = server.communicate(timeout=150)
        print(f"rxe client: rc {client.returncode}\n{client.stdout}simnic server: rc {server.returncode}\n{sout}")
        if client.returncode != 0 or len(pings(client.stdout)) != 10:
            raise Fail("rping from kernel rxe to simnic failed")
        if server.returncode != 0:
            raise Fail("simnic's rping server failed")
        server = None
        print(sim("stats", "rs0").strip())
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.wait()
        subprocess.run([TOOLS.simnic, "daemon", "--stop"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)
        shutil.rmtree(rt, ignore_errors=True)
    pcap = rig.cmd("pcap", check=0).stdout.strip()
    time.sleep(0.5)
    frames = roce_frames(pcap)
    mine = [f for f in frames if "10.0.0.100" in (f[0], f[1])]
    print(f"wire: {len(frames)} RoCE frames, {len(mine)} to or from simnic")
    if not [f for f in mine if f[0] == "10.0.0.100"] or not [f for f in mine if f[1] == "10.0.0.100"]:
        raise Fail("simnic's traffic is not on the rig's wire")
    r = subprocess.run([sys.executable, TOOLS.wire_check, "--cm", pcap], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    print(r.stdout.strip())
    if r.returncode != 0:
        raise Fail("the wire's capture breaks rxe's rules")
    rig.cmd("stop", check=0)
    rig.assert_clean("stop")


TESTS = {"pingpong": test_pingpong, "exec_timeout": test_exec_timeout,
         "port_in_use": test_port_in_use, "boot_timeout": test_boot_timeout,
         "rxe_loopback": test_rxe_loopback, "wire_rping": test_wire_rping}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rig", default=os.path.join(HERE, "simnic-rig"))
    ap.add_argument("--budget", type=float, default=500,
                    help="seconds before the test gives up and cleans up")
    ap.add_argument("--simnic", help="the simnic executable (wire_rping)")
    ap.add_argument("--verbs", help="libsimnic-verbs.so (wire_rping)")
    ap.add_argument("--wire-check", help="testbench/system/wire_check.py (wire_rping)")
    ap.add_argument("test", choices=sorted(TESTS))
    a = ap.parse_args()
    TOOLS.simnic, TOOLS.verbs, TOOLS.wire_check = a.simnic, a.verbs, a.wire_check

    # Make sure the image exists first, so that its build time does not eat
    # into boot timeouts (and so that failures there are reported as such).
    r = subprocess.run([sys.executable, a.rig, "setup"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print(r.stdout)
        print("FAILED: simnic-rig setup")
        return 1

    def on_alarm(_s, _f):
        raise Fail(f"test budget of {a.budget:.0f} s exceeded")
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, lambda _s, _f: (_ for _ in ()).throw(Fail("terminated")))
    signal.alarm(int(a.budget))
    rig = Rig(a.rig, a.test)
    ok = False
    t0 = time.monotonic()
    try:
        TESTS[a.test](rig)
        ok = True
    except Fail as e:
        print(f"FAILED: {e}")
    except subprocess.TimeoutExpired as e:
        print(f"FAILED: timeout: {e}")
    finally:
        signal.alarm(0)
        rig.cleanup(ok)
    if rig.stray():
        print(f"FAILED: stray processes: {rig.stray()}")
        ok = False
    print(f"{a.test}: {'passed' if ok else 'FAILED'} in {time.monotonic() - t0:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
