"""The interop matrix (issue 10, sections 3 and 5): kernel rxe in a VM on one
side, a simnic device on the host on the other, joined by the rig's wire
(`simnic link add NAME type soft|model wire 127.0.0.1:PORT addr A/N`).

Every test runs with simnic as server and as client, for soft and for model,
at MTU 1024 and 4096 (the VM's eth0 at 1500 or 9000, the simnic devices'
`mtu` likewise, and the tools' `-m` where they take one). Each run checks the
tools' own verdicts (exit codes, iteration counts, -c / -V data checks) and
the wire's capture of the run: every frame either side sent has a valid ICRC
and follows docs/rxe-wire-rules.md (testbench/system/wire_check.py). Every
run appends one line to results.jsonl in the shared co-verification format
(docs/coverification.md is rendered from it by testbench/coverify/report.py).

The tests are imported by rig_tests.py, which owns the groups, the VMs'
life cycle and the per-check report."""

import datetime
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

# The simnic devices of a group, by type: (link name, address, MAC). A MAC of
# None is derived from the name; the fault group sets its devices' MACs so
# that each gets fault rules of its own (`from=MAC`, `to=MAC`).
DEVICES = {"soft": ("isoft", "10.0.0.100", None), "model": ("imodel", "10.0.0.101", None)}
VM_IP = "10.0.0.1"
VM_PORT = 18515          # the pingpongs' and perftest's default port, forwarded by the rig
NETDEV_MTU = {1024: 1500, 4096: 9000}


class Fail(Exception):
    """A check failed (rig_tests.py reports it)."""


# Run in the VM beside a server: returns once a TCP socket listens on the
# port (IPv4 or IPv6), exit code 1 after 15 s without.
LISTEN_WAIT = ("n=0; while ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | "
               "grep -q ':{port:04X} [0-9A-F]*:[0-9A-F]* 0A'; do "
               "[ $n -lt 300 ] || exit 1; sleep 0.05; n=$((n+1)); done")


# --------------------------------------------------------------------------
# The tests. A test is a server command and a client command (the client's
# is the server's plus the server's address); {mtu} is the IB MTU of the
# phase, {dev} and {gid} the local device and its IPv4 GID index, {port} the
# TCP port of the tools' out-of-band exchange.

class Test:
    def __init__(self, name, cmd, kind="verbs", check=None, iters=None, faults=False):
        self.name = name
        self.cmd = cmd            # format string, server side
        self.kind = kind          # verbs (TCP exchange) | rping, udaddy (rdma_cm)
        self.check = check        # a word that must show in the client's output
        self.iters = iters        # the pingpongs: "N iters in" in both outputs
        self.faults = faults      # also run under the fault injector (RC only)


def _pp(tool, size, iters, extra=""):
    return f"{tool} -d {{dev}} -g {{gid}} -c -n {iters} -s {size} {extra}".strip()


def _pt(tool, extra):
    return f"{tool} -d {{dev}} -x {{gid}} -F -m {{mtu}} {extra}"


# Sizes relative to the MTU are evaluated per phase (multi-packet means
# three full packets and a partial one at either MTU).
TESTS = [
    Test("ibv_rc_pingpong 1 byte", _pp("ibv_rc_pingpong", 1, 10, "-m {mtu}"), iters=10),
    # Not under faults: the pingpongs end without a handshake, so when the
    # last ACK is lost the sender retries into the peer's destroyed QP, for
    # ever (retry_cnt 7, which rxe and simnic read as "no limit").
    Test("ibv_rc_pingpong multi-packet", _pp("ibv_rc_pingpong", "{multi}", 10, "-m {mtu}"),
         iters=10),
    Test("ibv_rc_pingpong 1 MiB", _pp("ibv_rc_pingpong", 1 << 20, 2, "-m {mtu}"), iters=2),
    Test("ibv_uc_pingpong", _pp("ibv_uc_pingpong", "{multi}", 10, "-m {mtu}"), iters=10),
    Test("ibv_ud_pingpong", _pp("ibv_ud_pingpong", "{mtu}", 10), iters=10),
    Test("ibv_srq_pingpong -q 4", _pp("ibv_srq_pingpong", "{multi}", 10, "-q 4 -m {mtu}"),
         iters=10),
    Test("ib_send_bw", _pt("ib_send_bw", "-n 20 -s {multi}"), check="#bytes", faults=True),
    Test("ib_write_bw", _pt("ib_write_bw", "-n 20 -s {multi}"), check="#bytes", faults=True),
    Test("ib_write_bw -q 4", _pt("ib_write_bw", "-q 4 -n 10 -s {multi}"), check="#bytes"),
    Test("ib_read_bw", _pt("ib_read_bw", "-n 20 -s {multi}"), check="#bytes", faults=True),
    Test("ib_atomic_bw CMP_AND_SWAP", _pt("ib_atomic_bw", "-A CMP_AND_SWAP -n 20"),
         check="#bytes", faults=True),
    Test("ib_atomic_bw FETCH_AND_ADD", _pt("ib_atomic_bw", "-A FETCH_AND_ADD -n 20"),
         check="#bytes"),
    Test("ib_send_lat", _pt("ib_send_lat", "-n 20 -s 64"), check="#bytes"),
    Test("ib_read_lat", _pt("ib_read_lat", "-n 20 -s {multi}"), check="#bytes"),
    Test("rping -C 10 -V", "rping -C 10 -V -S {multi}", kind="rping", faults=True),
    # UD through rdma_cm: SIDR against the kernel's ib_cm, then UD SENDs
    # each way (the server answers through ibv_create_ah_from_wc).
    Test("udaddy -c 2 -C 20", "udaddy -c 2 -C 20", kind="udaddy", check="data transfers complete"),
]

# The data-integrity program across the wire (issue 10 section 3, last item;
# testbench/workload) is not a Test of this matrix: it has its own client and
# server exchange and verdict, and rig_tests.py runs it (workload_both_ways)
# on a clean wire in the kernel groups and under faults in the fault groups.


# Deliberate differences between simnic and kernel rxe that a run may show:
# (regular expression on the test's name, a text every error of the run
# contains, the rules doc's anchor). A run whose every error is such a point
# records "differs" with the link instead of "fail". None today: every
# difference the matrix found so far was a bug, fixed, or a rule of rxe's
# that the checks had wrong.
KNOWN_DIFFERENCES = []


def known_difference(name, errors):
    """The reason link when every error is a declared difference, else ''."""
    for pattern, text, reason in KNOWN_DIFFERENCES:
        if re.search(pattern, name) and errors and all(text in e for e in errors):
            return reason
    return ""


def roce_v2(frames):
    """(index, pcap record header, frame, BTH offset) of each IPv4 RoCE v2
    frame (UDP port 4791) long enough for its BTH and ICRC, in order."""
    for i, (h, d) in enumerate(frames):
        if len(d) < 42 or d[12:14] != b"\x08\x00" or d[23] != 17:
            continue
        bth = 14 + (d[14] & 15) * 4 + 8
        if len(d) < bth + 16 or struct.unpack(">H", d[bth - 6:bth - 4])[0] != 4791:
            continue
        yield i, h, d, bth


# Kernel rxe's requester can stop in the middle of a message for good: every
# PSN it sent acknowledged, the message not finished, nothing more sent, so
# that no retransmit timer runs either (docs/rxe-wire-rules.md#rxe-req-stall).
RXE_REQ_STALL = "docs/rxe-wire-rules.md#rxe-req-stall"
MID_MESSAGE = (0x00, 0x01, 0x06, 0x07)  # RC SEND and RDMA WRITE FIRST, MIDDLE


def rxe_requester_stall(frames, rxe_ip, dev_ip, now, quiet_s=30.0):
    """What shows, in a run's frames ((pcap record header, frame) pairs),
    that rxe_ip's requester stopped mid-message toward dev_ip with all it
    sent acknowledged and has been silent toward dev_ip for quiet_s seconds
    before `now` (seconds since the epoch, the pcap's clock), or ''."""
    rxe, dev = socket.inet_aton(rxe_ip), socket.inet_aton(dev_ip)
    last = None      # (time, opcode, PSN) of rxe's last frame to the device
    acked = None     # the PSN of the device's last positive ACK
    nak_after = False
    for _, h, d, bth in roce_v2(frames):
        op, psn = d[bth], struct.unpack(">I", d[bth + 8:bth + 12])[0] & 0xFFFFFF
        if d[26:30] == rxe and d[30:34] == dev:
            sec, usec = struct.unpack("<II", h[:8])
            last = (sec + usec / 1e6, op, psn)
            nak_after = False
        elif d[26:30] == dev and d[30:34] == rxe and op == 0x11:
            if d[bth + 12] >> 5 == 0:
                acked = psn
            else:
                nak_after = True
    if last is None or last[1] not in MID_MESSAGE or acked != last[2] or nak_after:
        return ""
    if now - last[0] < quiet_s:
        return ""
    return (f"rxe stopped sending in the middle of a message (its last frame opcode 0x{last[1]:02x}, "
            f"PSN {last[2]}, acknowledged) and sent nothing more for {now - last[0]:.0f} s")


# Kernel rxe's completer can reach its error state with a WQE whose status
# is still success (a response packet out of the order it expects, after
# READ responses were resent and reordered): it warns (WARN_ON_ONCE in
# rxe_completer), completes that WQE as if it had succeeded and moves the QP
# to ERROR, flushing the rest of its work (docs/rxe-wire-rules.md#rxe-completer-warn).
# A tool that skips flushed completions, as rping does, then waits for ever.
RXE_COMPLETER_WARN = "docs/rxe-wire-rules.md#rxe-completer-warn"
COMPLETER_WARN = re.compile(r"WARNING: CPU: \d+ PID: \d+ at drivers/infiniband/sw/rxe/rxe_comp\.c:(\d+) "
                            r"rxe_completer")


def rxe_completer_warned(kernel_log):
    """What the VM's kernel log of one run shows of rxe's completer failing a
    QP past its own warning, or ''."""
    warns = COMPLETER_WARN.findall(kernel_log)
    if not warns:
        return ""
    return (f"rxe's completer warned {len(warns)} time(s) (rxe_comp.c:{warns[0]}, an error state with "
            f"a successful WQE) and flushed the QP's work without an error completion")


def rxe_log_lines(text, keep=40):
    """The lines of a kernel log about rxe, and each warning whole (its
    last `keep` lines)."""
    out, inside = [], False
    for line in text.splitlines():
        inside = inside or "WARNING:" in line
        if inside or "rxe" in line:
            out.append(line)
        if "end trace" in line:
            inside = False
    return out[-keep:]


def matrix_tests():
    """The tests a group runs."""
    return TESTS


# --------------------------------------------------------------------------
# The shared results file (tools/COVERIFY-RESULTS.md)

def results_path():
    d = os.environ.get("SIMNIC_COVERIFY_RESULTS") or os.path.join(os.getcwd(), "coverify")
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, "results.jsonl")


def record(**fields):
    fields.setdefault("reason", "")
    fields["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(results_path(), "a") as f:
        f.write(json.dumps(fields, sort_keys=True) + "\n")


# --------------------------------------------------------------------------
# The wire's capture, sliced per run

PCAP_HEADER_LEN = 24


def pcap_records(path, start=0):
    """(offset after the header, [(header, frame)]) of a classic pcap from the
    byte offset `start` (0: from the first record)."""
    out = []
    with open(path, "rb") as f:
        hdr = f.read(PCAP_HEADER_LEN)
        if start:
            f.seek(start)
        end = f.tell()
        while True:
            # The wire flushes its capture when idle: the last record may be
            # partly written, and is read again next time.
            h = f.read(16)
            if len(h) < 16:
                break
            n = struct.unpack("<IIII", h)[2]
            d = f.read(n)
            if len(d) < n:
                break
            out.append((h, d))
            end = f.tell()
    return hdr, out, end


def is_arp(d):
    return len(d) >= 42 and d[12:14] == b"\x08\x06"


def roce_count(frames, addr):
    """RoCE v2 frames from and to `addr` (dotted IPv4)."""
    a = socket.inet_aton(addr)
    n_from = n_to = 0
    for _, d in frames:
        if len(d) < 42 or d[12:14] != b"\x08\x00" or d[23] != 17:
            continue
        l4 = 14 + (d[14] & 15) * 4
        if struct.unpack(">H", d[l4 + 2:l4 + 4])[0] != 4791:
            continue
        n_from += d[26:30] == a
        n_to += d[30:34] == a
    return n_from, n_to


CM_ATTR_DREQ = 0x0015  # IBTA 12.6: DisconnectRequest


def cm_mads_to(frames, addr, attr):
    """How many CM MADs (QP1 over RoCE v2) of attribute `attr` the frames
    carry to `addr` (dotted IPv4)."""
    a = socket.inet_aton(addr)
    n = 0
    for _, _, d, bth in roce_v2(frames):
        if d[30:34] != a:
            continue
        # UD SEND ONLY to QP1 (BTH byte 0 is 0x64, dest QP bytes 5..7),
        # then DETH (8 bytes), then the MAD: class 0x07 (CM), attribute at 16.
        mad = bth + 12 + 8
        if (len(d) >= mad + 18 and d[bth] == 0x64 and d[bth + 5:bth + 8] == b"\x00\x00\x01"
                and d[mad + 1] == 0x07 and struct.unpack(">H", d[mad + 16:mad + 18])[0] == attr):
            n += 1
    return n


class Capture:
    """Cuts the wire's capture into runs. wire_check.py wants ARP before a
    flow's first RoCE frame: a run's slice starts with every ARP frame the
    wire carried before it (the neighbour entries outlive the runs).
    `delivered`: the wire's capture after its faults (simnic-rig's
    wire-delivered.pcap), when it injects them."""

    def __init__(self, pcap, wire_check, delivered=None):
        self.pcap = pcap
        self.delivered = delivered
        self.wire_check = wire_check
        self.arp = []
        self.offset = 0
        self.doffset = 0

    def restart(self):
        """The wire was started again (fresh VMs after a guest oops): its
        capture files are new, and the ARP frames of the old wire are no
        neighbour entries of the new VM."""
        self.arp, self.offset, self.doffset = [], 0, 0

    def mark(self):
        time.sleep(0.2)  # frames still in flight belong to the previous run
        _, recs, end = pcap_records(self.pcap, self.offset)
        self.arp += [r for r in recs if is_arp(r[1])]
        self.offset = end
        if self.delivered and os.path.exists(self.delivered):
            self.doffset = pcap_records(self.delivered, self.doffset)[2]

    def lost_dreq(self, addr):
        """True when, since mark(), the wire carried a DREQ to `addr` and its
        faults delivered none."""
        if not self.delivered or not os.path.exists(self.delivered):
            return False
        time.sleep(0.3)
        sent = cm_mads_to(pcap_records(self.pcap, self.offset)[1], addr, CM_ATTR_DREQ)
        got = cm_mads_to(pcap_records(self.delivered, self.doffset)[1], addr, CM_ATTR_DREQ)
        return sent > 0 and got == 0

    def check(self, addr, cm):
        """Checks the frames since mark(): (ok, summary, frames, path of the
        run's capture; the caller keeps or removes it)."""
        time.sleep(0.3)
        hdr, recs, end = pcap_records(self.pcap, self.offset)
        fd, path = tempfile.mkstemp(suffix=".pcap", prefix="interop-run-")
        with os.fdopen(fd, "wb") as f:
            f.write(hdr)
            for h, d in self.arp + recs:
                f.write(h + d)
        argv = [sys.executable, self.wire_check, "--arp-for", addr] + (["--cm"] if cm else [])
        r = subprocess.run(argv + [path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=120)
        self.arp += [r for r in recs if is_arp(r[1])]
        self.offset = end
        return r.returncode == 0, r.stdout.strip(), recs, path


def stop_vm_tool(rig, tool):
    """Kills every process of `tool` in vm0 (none running is no error)."""
    rig.cmd("exec", 0, f"kill $(pidof {tool}) 2>/dev/null; true", timeout=60)


def keep_capture(path, name):
    """Moves a failed run's capture beside results.jsonl (captures/NAME.pcap)
    and returns its path there."""
    d = os.path.join(os.path.dirname(results_path()), "captures")
    os.makedirs(d, exist_ok=True)
    dst = os.path.join(d, "".join(c if c.isalnum() or c in "-." else "_" for c in name) + ".pcap")
    shutil.move(path, dst)
    return dst


# --------------------------------------------------------------------------
# The host side: a private simnic daemon with the devices on the rig's wire

class ToolProcess(subprocess.Popen):
    """A host-side tool run under timeout(1), in a process group of its own:
    kill() ends the tool as well as timeout. (Killing timeout alone left the
    tool running with the output pipe open, and communicate() then waited
    for ever: seen when a 1 MiB ibv_rc_pingpong's client failed.)"""

    def __init__(self, argv, **kw):
        super().__init__(argv, start_new_session=True, **kw)

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Host:
    def __init__(self, simnic, verbs, wire_port):
        self.simnic = simnic
        self.verbs = verbs
        self.wire_port = wire_port
        self.rt = tempfile.mkdtemp(prefix="simnic-interop-rt-")
        os.chmod(self.rt, 0o700)
        self.env = dict(os.environ, SIMNIC_RUNTIME_DIR=self.rt)
        self.app_env = dict(self.env, LD_PRELOAD=verbs)
        self.links = []
        self.next_port = 19100 + os.getpid() % 500 * 20

    def sim(self, *args):
        r = subprocess.run([self.simnic] + [str(a) for a in args], env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        if r.returncode != 0:
            raise Fail(f"simnic {' '.join(map(str, args))}: {r.stdout}")
        return r.stdout

    def add_links(self, mtu, devices=None):
        for name in list(self.links):
            self.sim("link", "delete", name)
            self.links.remove(name)
        for typ, (name, addr, mac) in (devices or DEVICES).items():
            self.sim("link", "add", name, "type", typ.split("@")[0], "wire", f"127.0.0.1:{self.wire_port}",
                     "addr", f"{addr}/24", "mtu", NETDEV_MTU[mtu], *(("mac", mac) if mac else ()))
            self.links.append(name)
        return self.sim("link", "show").strip()

    def port(self):
        self.next_port += 1
        return self.next_port

    def popen(self, cmd):
        return ToolProcess(["timeout", "150"] + cmd.split(), env=self.app_env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def run(self, cmd, timeout=150):
        r = subprocess.run(["timeout", str(timeout)] + cmd.split(), env=self.app_env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout + 30)
        return r.returncode, r.stdout

    def close(self):
        subprocess.run([self.simnic, "daemon", "--stop"], env=self.env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)
        shutil.rmtree(self.rt, ignore_errors=True)


def tcp_listening(port):
    """Whether a host TCP socket listens on `port` (any address)."""
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    p = line.split()
                    if p[3] == "0A" and int(p[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


# --------------------------------------------------------------------------
# One run: a test, a simnic device, a role, an MTU

class Matrix:
    def __init__(self, rig, host, capture, kernel, series, devices=None, vm_log=None):
        """`vm_log`: (reset, read), two callables that empty the VM's kernel
        log (re-arming its warn-once warnings) and return it: given, each
        run starts with an empty log, and a failed run prints what the
        kernel said of rxe and is judged against rxe's known faults that only
        the log shows (the fault groups)."""
        self.rig = rig
        self.vm_log = vm_log
        self.devices = devices or DEVICES
        self.host = host
        self.capture = capture
        self.kernel = kernel           # e.g. 6.1.0-57-amd64
        self.series = series           # 6.1 | 6.12
        self.counts = {}

    def device_type(self, key):
        """soft or model: the fault group's keys are like soft@1%."""
        return key.split("@")[0]

    def commands(self, test, mtu, dev, server_side):
        fields = {"mtu": mtu, "multi": 3 * mtu + 100}
        if server_side == "vm":
            srv = test.cmd.format(dev="rxe0", gid=1, **fields)
            cli = test.cmd.format(dev=dev, gid=1, **fields)
        else:
            srv = test.cmd.format(dev=dev, gid=1, **fields)
            cli = test.cmd.format(dev="rxe0", gid=1, **fields)
        return srv, cli

    def run_one(self, test, typ, mtu, role, timeout=90):
        """role: simnic-server | simnic-client. Returns (errors, detail,
        the tools' outputs)."""
        dev, addr, _ = self.devices[typ]
        srv, cli = self.commands(test, mtu, dev, "host" if role == "simnic-server" else "vm")
        if self.vm_log:
            self.vm_log[0]()
        t0 = time.monotonic()
        self.capture.mark()
        if test.kind == "rping":
            out = self.run_rping(srv, cli, addr, role, timeout)
        elif test.kind == "udaddy":
            out = self.run_udaddy(srv, cli, addr, role, timeout)
        else:
            out = self.run_verbs(srv, cli, role, timeout)
        errors = self.verdict(test, out)
        ok_wire, summary, frames, pcap = self.capture.check(addr, test.kind in ("rping", "udaddy"))
        if errors and ok_wire:
            stall = rxe_requester_stall(frames, VM_IP, addr, time.time())
            if stall:
                out["differs"] = (RXE_REQ_STALL, stall)
        if errors and self.vm_log:
            klog = self.vm_log[1]()
            out["kernel_log"] = rxe_log_lines(klog)
            warned = rxe_completer_warned(klog)
            if ok_wire and warned and "differs" not in out:
                out["differs"] = (RXE_COMPLETER_WARN, warned)
        n_from, n_to = roce_count(frames, addr)
        if not ok_wire:
            errors.append(f"wire: {summary}")
        elif not n_from or not n_to:
            errors.append(f"wire: {n_from} RoCE frames from simnic, {n_to} to it")
        if errors:
            kept = keep_capture(pcap, f"{self.series}-{test.name}-{typ}-{mtu}-{role}")
            errors.append(f"capture {kept}")
        else:
            os.unlink(pcap)
        dt = time.monotonic() - t0
        m = re.search(r"(\d+) overtaken\).*\((\d+) inside messages\)", summary)
        if ok_wire and m:
            summary = f"IDs overtaken {m.group(1)}, AckReq inside messages {m.group(2)}"
        detail = (f"{dt:.1f} s; {n_from} frames from simnic, {n_to} to it"
                  + (f"; wire ok ({summary})" if ok_wire else "")
                  + (f"; {out['note']}" if "note" in out else "")
                  + (f"; {out['differs'][1]}" if "differs" in out else "")
                  + ("; " + "; ".join(errors) if errors else ""))
        return errors, detail, out

    def run_verbs(self, srv, cli, role, timeout):
        out = {}
        if role == "simnic-server":
            port = self.host.port()
            server = self.host.popen(f"{srv} -p {port}")
            for _ in range(50):
                if tcp_listening(port) or server.poll() is not None:
                    break
                time.sleep(0.1)
            c = self.rig.cmd("exec", "--timeout", timeout, 0, f"{cli} -p {port} 10.0.2.2",
                             timeout=timeout + 30)
            out["client"] = (c.returncode, c.stdout + c.stderr)
            try:
                # A server whose client failed may wait for ever.
                sout, _ = server.communicate(timeout=30 if c.returncode == 0 else 3)
            except subprocess.TimeoutExpired:
                server.kill()
                sout, _ = server.communicate()
            out["server"] = (server.returncode, sout)
        else:
            hport = self.rig.cmd("port", 0, VM_PORT, check=0).stdout.strip()
            # QEMU accepts the host's connection before the VM's server
            # listens (and then resets it): the client starts once the VM
            # says that its server listens. (exec's output comes when the
            # command ends, so a second exec waits for the socket.)
            server = self.rig.popen("exec", "--timeout", timeout, 0, srv)
            try:
                w = self.rig.cmd("exec", "--timeout", 30, 0, LISTEN_WAIT.format(port=VM_PORT),
                                 timeout=60)
                if w.returncode != 0:
                    out["client"] = (-1, f"the VM's server did not listen within 30 s: {w.stdout}")
                    self.kill_vm_tool(srv)
                else:
                    rc, cout = self.host.run(f"{cli} -p {hport} 127.0.0.1", timeout)
                    out["client"] = (rc, cout)
                    if rc != 0:
                        self.kill_vm_tool(srv)
                sout, _ = server.communicate(timeout=timeout + 30)
                out["server"] = (server.returncode, sout)
            finally:
                if server.poll() is None:
                    server.kill()
                    server.wait()
        return out

    def kill_vm_tool(self, cmd):
        """Stops a VM-side tool whose peer failed (it would wait for ever)."""
        time.sleep(2)
        stop_vm_tool(self.rig, cmd.split()[0])

    def run_rping(self, srv, cli, addr, role, timeout):
        # -I on the host's client: the device to use (the CM would take the
        # first device on the VM's subnet, whichever type it is).
        if role == "simnic-server":
            port = self.host.port()
            return self.run_cm_pair(role, timeout, f"{srv} -s -a {addr} -p {port}",
                                    f"{cli} -v -c -a {addr} -p {port}", "REJECTED", addr)
        port = 7174 + self.host.port() % 100
        return self.run_cm_pair(role, timeout, f"{srv} -s -a {VM_IP} -p {port}",
                                f"{cli} -v -c -I {addr} -a {VM_IP} -p {port}", "REJECTED")

    def run_udaddy(self, srv, cli, addr, role, timeout):
        """udaddy has no port option (rdma_cm port 7174 on both sides, in
        the host's agent and the VM's kernel, which do not share one); -b
        binds the server, and the host's client, to the device's address.
        A client that finds no listener yet gets UNREACHABLE (a SIDR_REP
        "unsupported")."""
        if role == "simnic-server":
            return self.run_cm_pair(role, timeout, f"{srv} -b {addr}", f"{cli} -s {addr}", "UNREACHABLE")
        return self.run_cm_pair(role, timeout, f"{srv} -b {VM_IP}", f"{cli} -s {VM_IP} -b {addr}",
                                "UNREACHABLE")

    @staticmethod
    def rping_teardown_race(rc, text, pings=10):
        """True when an rping client did all its work and then failed only in
        rping's own teardown: its CM thread, which it neither stops nor
        joins, reads the event channel that main() has just destroyed, and
        exits 255 with `rdma_get_cm_event: Bad file descriptor`. Seen once
        in rig.interop_faults612 (rxe's client against a soft server, after
        its 10 verified pings); it depends on the two threads' timing only."""
        lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
        done = sum(1 for l in lines if l.startswith("ping data: rdma-ping-"))
        return (rc == 255 and done == pings and bool(lines)
                and lines[-1] == "rdma_get_cm_event: Bad file descriptor")

    def run_cm_pair(self, role, timeout, server_cmd, client_cmd, no_listener, addr=None):
        """An rdma_cm tool pair: the server on the host (simnic-server) or in
        the VM, the client on the other side, run again while its output
        says `no_listener` (nothing shows when an rdma_cm server listens).
        `addr`: the simnic device's address, to recognise a lost DREQ."""
        out = {}
        if role == "simnic-server":
            server = self.host.popen(server_cmd)
            time.sleep(0.5)
            for _ in range(10):
                c = self.rig.cmd("exec", "--timeout", timeout, 0, client_cmd, timeout=timeout + 30)
                if no_listener not in c.stdout + c.stderr:
                    break
                time.sleep(0.5)
            out["client"] = (c.returncode, c.stdout + c.stderr)
            # rping's client destroys its ID right after rdma_disconnect, and
            # ib_cm then stops resending the DREQ (cm_destroy_id cancels it):
            # when the wire's faults drop that one DREQ, the server, which
            # ends only on DISCONNECTED, waits for ever, as it would on any
            # NIC. Seen in rig.interop_faults612 (soft device, 5% loss).
            lost = c.returncode == 0 and addr is not None and self.capture.lost_dreq(addr)
            try:
                # A server whose client failed may wait for ever.
                sout, _ = server.communicate(timeout=30 if c.returncode == 0 and not lost else 3)
            except subprocess.TimeoutExpired:
                server.kill()
                sout, _ = server.communicate()
                if lost:
                    out["note"] = ("the client's only DREQ was dropped by the wire's faults "
                                   "(ib_cm does not resend it once rping destroys its ID): the "
                                   "server, waiting for DISCONNECTED, was stopped")
            out["server"] = (None if "note" in out else server.returncode, sout)
            self.note_rping_race(out, client_cmd)
        else:
            server = self.rig.popen("exec", "--timeout", timeout, 0, server_cmd)
            try:
                time.sleep(1.0)
                for _ in range(30):
                    rc, cout = self.host.run(client_cmd, timeout)
                    if no_listener not in cout:
                        break
                    time.sleep(0.5)
                out["client"] = (rc, cout)
                if rc != 0:
                    self.kill_vm_tool(server_cmd)
                sout, _ = server.communicate(timeout=timeout + 30)
                out["server"] = (server.returncode, sout)
                self.note_rping_race(out, client_cmd)
            finally:
                if server.poll() is None:
                    server.kill()
                    server.wait()
        return out

    def note_rping_race(self, out, client_cmd):
        rc, text = out["client"]
        if client_cmd.startswith("rping") and "note" not in out and self.rping_teardown_race(rc, text):
            out["client"] = (None, text)
            out["note"] = ("the client exited 255 after its 10 verified pings, in rping's own "
                           "teardown (its CM thread read the event channel main() had destroyed)")

    @staticmethod
    def verdict(test, out):
        errors = []
        for side in ("client", "server"):
            rc, text = out[side]
            if rc is None and "note" in out:
                continue  # stopped for a reason out["note"] gives
            if rc != 0:
                tail = " | ".join(l.strip() for l in text.strip().splitlines()[-3:])
                errors.append(f"{side} rc {rc}: {tail}")
        crc, ctext = out["client"]
        if test.iters and crc == 0 and f"{test.iters} iters in" not in ctext:
            errors.append(f"the client did not report {test.iters} iterations")
        if test.check and crc == 0 and test.check not in ctext:
            errors.append(f"no '{test.check}' in the client's report")
        if test.kind == "rping" and crc == 0:
            pings = [l for l in ctext.splitlines() if l.startswith("ping data: rdma-ping-")]
            if len(pings) != 10:
                errors.append(f"{len(pings)} verified pings, not 10")
        return errors

    def run_test(self, test, devices, mtus, roles, log, label=""):
        """Runs a test over the given axes (devices: keys of self.devices);
        records and prints every run. Raises Fail naming the runs that
        failed. `label` is added to the row's name (the fault rules)."""
        failed = []
        for mtu in mtus:
            for typ in devices:
                for role in roles:
                    errors, detail, out = self.run_one(test, typ, mtu, role)
                    reason = out["differs"][0] if "differs" in out else known_difference(test.name, errors)
                    ok = not errors or bool(reason)
                    res = "pass" if not errors else "differs" if reason else "fail"
                    record(kind="interop", name=test.name + (f" ({label})" if label else ""),
                           target=self.device_type(typ), peer=f"rxe-{self.series}", mtu=mtu,
                           role=role, result=res, detail=detail, reason=reason, kernel=self.kernel)
                    key = (typ, res)
                    self.counts[key] = self.counts.get(key, 0) + 1
                    log(f"  {'ok  ' if ok else 'FAIL'} {typ:5} mtu {mtu} {role:13} {detail}")
                    if not ok:
                        failed.append(f"{typ} mtu {mtu} {role}")
                        for side in ("client", "server"):
                            rc, text = out[side]
                            log(f"    {side} (rc {rc}):\n      " + "\n      ".join(
                                l[:160] for l in text.strip().splitlines()[-12:]))
                        if "kernel_log" in out:
                            log("    the VM's kernel log (rxe, warnings):\n      " + (
                                "\n      ".join(l[:160] for l in out["kernel_log"]) or "(nothing)"))
        if failed:
            raise Fail(f"{test.name}: failed {len(failed)} runs: {', '.join(failed)}")
