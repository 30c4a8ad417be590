#!/usr/bin/env python3
"""coverify.py: differential scenarios (issue 10, section 4).

One QP on a *target* device is driven by crafted frames injected on a wire of
frames, and what the target answers is recorded: its frames, the completions
and async events its owner sees, the QP's state, the memory it touched. The
same scenario runs against kernel rxe in a rig VM (6.1, 6.12), a soft device
and a model device; each answer is normalized (what legitimately differs
between targets: QPNs, keys, addresses, IP IDs, times) and compared field by
field with the reference answer recorded from kernel rxe
(reference/rxe-<kernel>/<scenario>.json, written by --record).

usage:
  coverify.py run --target soft|model|rxe-6.1|rxe-6.12 [--target ...]
                  [SCENARIO.scn ...] [--record] [--results DIR]
                  [--simnic PATH --verbs LIB --inject PATH --agent PATH]
                  [--rig PATH]
  coverify.py list                              the scenarios and their notes

The pieces (testbench/coverify/README.md has the whole design):
  target agent  target/simnic-target.c: a libibverbs program the runner
                drives over TCP (in the VM: through the rig's control NIC)
  injector      simnic-inject (inject/injector.cc, on simnic's packet core):
                a NIC of its own on the wire that sends the frames a
                scenario describes and reports every frame sent to it
  scenarios     scenarios/*.scn: setup, steps and notes, one file each

Results: one JSON line per (scenario, target) appended to
$SIMNIC_COVERIFY_RESULTS/results.jsonl (default build/coverify/), and each
target's full answer in answers/<target>/<scenario>.json beside it.

Python 3 standard library only.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))
SCENARIO_DIR = os.path.join(HERE, "scenarios")
REFERENCE_DIR = os.path.join(HERE, "reference")

# The injector plays the peer QP: its own NIC on the wire.
INJ_MAC = "02:00:00:00:00:32"
INJ_IP = "10.0.0.50"
INJ_QPN = 0x100
# The target is 10.0.0.1 with vm0's MAC, in the VM and on a simnic device
# alike, so that the addresses in its frames need no normalizing.
TARGET_IP = "10.0.0.1"
TARGET_MAC = "52:54:00:5e:00:01"
# Defaults a scenario's `connect` gives the target QP.
DEFAULT_RQ_PSN = 100      # first PSN the target's responder expects
DEFAULT_SQ_PSN = 5000     # first PSN the target's requester sends
DEFAULT_QKEY = 0x11111111
# Remote memory the injector pretends to have (as the target's requests
# name it): nothing is there, the injector answers by hand.
PEER_VA = 0x7F0000001000
PEER_RKEY = 0x1234


class ScenarioError(Exception):
    """A scenario that cannot go on (a setup step failed, a bad line)."""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Scenarios

class Step:
    def __init__(self, lineno, cmd, args, words, text):
        self.lineno, self.cmd, self.args, self.words, self.text = lineno, cmd, args, words, text

    def __repr__(self):
        return f"line {self.lineno}: {self.text}"


class Scenario:
    """A scenario file: a header of notes, then steps, one per line.

    Header lines: `scenario NAME`, `about TEXT`, `targets T,...` (where it
    runs; default all), `reference TARGET` (whose recorded answer the others
    are compared with; default rxe-6.1), `differ TARGETS [PATHS] reason=DOC
    -- WHY` (a deliberate difference), `rxe TEXT` (where rxe departs from the
    IBA spec), `note TEXT`. A line ending in a backslash goes on. Everything
    else is a step (see run_step)."""

    HEADER = {"scenario", "about", "targets", "reference", "differ", "rxe", "note", "mtu"}

    def __init__(self, path):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.about, self.notes, self.rxe_notes, self.differ = [], [], [], []
        self.targets = None
        self.reference = "rxe-6.1"
        self.mtu = 1024
        self.steps = []
        with open(path) as f:
            lines = f.read().split("\n")
        buf, start = "", 0
        for i, raw in enumerate(lines, 1):
            # A comment is a `#` at the start of a line or after a blank
            # (reason=docs/x.md#anchor is not one); header text keeps its own.
            line = raw.rstrip()
            if not buf and not raw.lstrip().startswith(("about", "note", "rxe", "differ")):
                line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].rstrip()
            if not buf:
                start = i
            if line.endswith("\\"):
                buf += line[:-1] + " "
                continue
            line = (buf + line).strip()
            buf = ""
            if not line:
                continue
            words = line.split()
            cmd = words[0]
            if cmd in self.HEADER:
                rest = " ".join(line[len(cmd):].split())
                if cmd == "scenario":
                    self.name = rest
                elif cmd == "about":
                    self.about.append(rest)
                elif cmd == "note":
                    self.notes.append(rest)
                elif cmd == "rxe":
                    self.rxe_notes.append(rest)
                elif cmd == "targets":
                    self.targets = [t.strip() for t in rest.replace(",", " ").split()]
                elif cmd == "reference":
                    self.reference = rest
                elif cmd == "mtu":
                    self.mtu = int(rest)
                elif cmd == "differ":
                    self.differ.append(parse_differ(rest, path, i))
                continue
            args, pos = {}, []
            for w in words[1:]:
                if "=" in w and not w.startswith("="):
                    k, v = w.split("=", 1)
                    args[k] = v
                else:
                    pos.append(w)
            self.steps.append(Step(start, cmd, args, pos, line))

    def runs_on(self, target):
        return self.targets is None or target in self.targets


def parse_differ(rest, path, lineno):
    """`differ soft,model [bth.psn,aeth.*] reason=docs/x.md#y -- why`."""
    why = ""
    if " -- " in rest:
        rest, why = rest.split(" -- ", 1)
    words = rest.split()
    if not words:
        raise ScenarioError(f"{path}:{lineno}: differ needs targets")
    d = {"targets": words[0].split(","), "paths": [], "reason": "", "why": why.strip()}
    for w in words[1:]:
        if w.startswith("reason="):
            d["reason"] = w[len("reason="):]
        else:
            d["paths"] += w.split(",")
    if not d["reason"]:
        raise ScenarioError(f"{path}:{lineno}: differ needs reason=docs/...#anchor")
    return d


# --------------------------------------------------------------------------
# Values: numbers, $variables and + - between them.

VAR = re.compile(r"\$([A-Za-z_][\w.]*)")


def evaluate(text, env):
    """An integer from '0x10', '$q.rq_psn+3', '$m0.addr+4096-8'."""
    s = text.strip()
    total, sign, pos = 0, 1, 0
    for m in re.finditer(r"([+-])|([^+-]+)", s):
        if m.group(1):
            sign = 1 if m.group(1) == "+" else -1
            continue
        term = m.group(2).strip()
        if term.startswith("$"):
            key = term[1:]
            if key not in env:
                raise ScenarioError(f"unknown variable ${key} (known: {', '.join(sorted(env))})")
            v = env[key]
        else:
            try:
                v = int(term, 0)
            except ValueError:
                raise ScenarioError(f"not a number: {term!r} in {text!r}")
        total += sign * v
        sign = 1
        pos += 1
    return total


def substitute(text, env):
    """A word with $variables replaced by their decimal values (for agent
    arguments such as sge=m0:$off:64 or raddr=$m0.addr)."""
    def one(m):
        return str(evaluate(m.group(0), env))
    return re.sub(r"\$[A-Za-z_][\w.]*(?:[+-](?:0x[0-9a-fA-F]+|\d+))*", one, text)


# --------------------------------------------------------------------------
# The target agent (simnic-target) and the injector (simnic-inject)

class Agent:
    def __init__(self, host, port, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.create_connection((host, port), timeout=5)
                self.sock.settimeout(60)
                self.f = self.sock.makefile("rwb")
                r = self.call("ping")
                if r.get("ok"):
                    break
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise ScenarioError(f"the target agent at {host}:{port} does not answer")
            time.sleep(0.3)

    def call(self, line):
        self.f.write((line + "\n").encode())
        self.f.flush()
        reply = self.f.readline()
        if not reply:
            raise ScenarioError(f"the target agent closed the connection (after {line!r})")
        return json.loads(reply)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Injector:
    def __init__(self, path, wire_port):
        self.p = subprocess.Popen([path, "--wire", f"127.0.0.1:{wire_port}", "--mac", INJ_MAC,
                                   "--ip", INJ_IP], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        hello = self.p.stdout.readline()
        if not hello or not json.loads(hello).get("ready"):
            raise ScenarioError(f"simnic-inject did not start: {hello!r}")

    def call(self, **req):
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise ScenarioError("simnic-inject exited")
        r = json.loads(line)
        if not r.get("ok"):
            raise ScenarioError(f"simnic-inject: {r.get('error')} (request {req})")
        return r

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


# --------------------------------------------------------------------------
# Targets

def free_tcp_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class SimnicTarget:
    """A soft or model device on a `simnic wire` of its own, and the agent on
    the host under simnic's verbs provider."""

    def __init__(self, kind, tools, workdir):
        self.name = kind
        self.kind = kind
        self.tools = tools
        self.dir = tempfile.mkdtemp(prefix=f"simnic-coverify-{kind}-", dir=workdir)
        self.rt = os.path.join(self.dir, "rt")
        os.mkdir(self.rt, 0o700)
        self.env = dict(os.environ, SIMNIC_RUNTIME_DIR=self.rt)
        self.procs = []
        self.scale = 1.0
        self.kernel = None

    def sim(self, *args):
        r = subprocess.run([self.tools.simnic] + [str(a) for a in args], env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        if r.returncode != 0:
            raise ScenarioError(f"simnic {' '.join(map(str, args))}: {r.stdout.strip()}")
        return r.stdout

    def start(self):
        ready = os.path.join(self.dir, "wire.ready")
        self.wire_pcap = os.path.join(self.dir, "wire.pcap")
        w = subprocess.Popen([self.tools.simnic, "wire", "--ready-file", ready, "--pcap", self.wire_pcap,
                              "-q"], env=self.env)
        self.procs.append(w)
        for _ in range(100):
            if os.path.exists(ready) and open(ready).read().strip():
                break
            time.sleep(0.05)
        self.wire_port = int(open(ready).read().split()[1])
        self.sim("link", "add", "scen0", "type", self.kind, "wire", f"127.0.0.1:{self.wire_port}",
                 "addr", f"{TARGET_IP}/24", "mac", TARGET_MAC)
        self.dev = "scen0"
        port = free_tcp_port()
        agent_log = open(os.path.join(self.dir, "agent.log"), "w")
        a = subprocess.Popen([self.tools.agent, "-p", str(port)], stdout=agent_log, stderr=agent_log,
                             env=dict(self.env, LD_PRELOAD=self.tools.verbs))
        self.procs.append(a)
        self.agent = Agent("127.0.0.1", port)
        self.injector = Injector(self.tools.inject, self.wire_port)

    def stop(self):
        for obj in ("agent", "injector"):
            if hasattr(self, obj):
                getattr(self, obj).close()
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        subprocess.run([self.tools.simnic, "daemon", "--stop"], env=self.env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


class RxeTarget:
    """Kernel rxe in one rig VM (vm0, 10.0.0.1), the agent in the VM reached
    through the control NIC, the injector on the rig's wire."""

    AGENT_PORT = 18530

    def __init__(self, kernel, tools, workdir):
        self.name = f"rxe-{kernel}"
        self.kernel = kernel
        self.tools = tools
        self.state = tempfile.mkdtemp(prefix=f"simnic-coverify-rig-{kernel}-", dir=workdir)
        # TCG VMs answer in milliseconds where a simnic device answers in
        # microseconds: response windows stretch.
        self.scale = 3.0
        self.server = None

    def rig(self, *args, timeout=400, check=True):
        argv = [sys.executable, self.tools.rig, "--state", self.state] + [str(a) for a in args]
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                           env=dict(os.environ, SIMNIC=self.tools.simnic))
        if check and r.returncode != 0:
            raise ScenarioError(f"simnic-rig {' '.join(map(str, args))}: {r.stderr.strip()[-2000:]}")
        return r

    def start(self):
        t0 = time.monotonic()
        self.rig("start", "--vms", 1, "--kernel", self.kernel, "--lifetime", self.tools.lifetime)
        st = json.loads(self.rig("status").stdout)
        self.boot_seconds = time.monotonic() - t0
        self.wire_port = st["wire"]["port"]
        self.dev = "rxe0"
        self.kernel_release = st["kernel"]
        argv = [sys.executable, self.tools.rig, "--state", self.state, "exec", "--timeout",
                str(self.tools.lifetime), "0", f"simnic-target -p {self.AGENT_PORT}"]
        self.server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        host_port = int(self.rig("port", 0, self.AGENT_PORT).stdout.strip())
        self.agent = Agent("127.0.0.1", host_port, timeout=60)
        self.injector = Injector(self.tools.inject, self.wire_port)

    def stop(self):
        for obj in ("agent", "injector"):
            if hasattr(self, obj):
                getattr(self, obj).close()
        self.rig("stop", check=False, timeout=120)
        if self.server and self.server.poll() is None:
            self.server.kill()
            self.server.wait()
        shutil.rmtree(self.state, ignore_errors=True)


def make_target(name, tools, workdir):
    if name in ("soft", "model"):
        return SimnicTarget(name, tools, workdir)
    if name.startswith("rxe-"):
        return RxeTarget(name[4:], tools, workdir)
    raise ScenarioError(f"unknown target {name}")


# --------------------------------------------------------------------------
# Running a scenario

def short_opcode(name, qp_type):
    """SEND_ONLY -> RC_SEND_ONLY for an RC QP; full names pass unchanged."""
    if re.match(r"^(RC|UC|UD)_", name) or re.match(r"^(0x)?[0-9a-fA-F]+$", name):
        return name
    return {"rc": "RC_", "uc": "UC_", "ud": "UD_"}[qp_type] + name


SYNDROMES = {"ACK": 0x1F}
NAK_CODES = {"PSN": 0, "SEQ": 0, "INV": 1, "ACCESS": 2, "OP": 3}


def syndrome(text, env):
    """ACK, ACK:credits, RNR:timer, NAK:PSN|INV|ACCESS|OP or a number."""
    t = text.upper()
    if t == "ACK":
        return 0x1F
    kind, _, val = t.partition(":")
    if kind == "ACK":
        return evaluate(val, env) & 0x1F
    if kind == "RNR":
        return 0x20 | (evaluate(val, env) & 0x1F)
    if kind == "NAK":
        return 0x60 | (NAK_CODES[val] if val in NAK_CODES else evaluate(val, env))
    return evaluate(text, env)


class Run:
    """One scenario against one target: its steps, the observations they
    record (the answer) and the expectations they check."""

    def __init__(self, sc, target):
        self.sc, self.t = sc, target
        self.env = {"inj.qpn": INJ_QPN, "peer.va": PEER_VA, "peer.rkey": PEER_RKEY, "mtu": sc.mtu}
        self.qps = {}          # name -> {"type", "qpn", "next_psn"}
        self.answer = []       # observations, in step order
        self.failures = []     # expectations that did not hold
        self.last = None       # the last observation (for expect)
        self.last_frames = []  # the frames of the last recv (for $last.*)
        self.last_send_t = None
        self.keys = {}         # value -> $name, for completions that carry keys

    # ---- helpers ----
    def agent(self, line, step, record=True, must=True):
        r = self.t.agent.call(line)
        if must and not r.get("ok"):
            raise ScenarioError(f"{step}: {r.get('error')}")
        return r

    def scaled(self, ms):
        return int(float(ms) * self.t.scale)

    def observe(self, step, kind, value):
        obs = {"line": step.lineno, "step": step.text, "kind": kind, "value": value}
        self.answer.append(obs)
        self.last = obs
        return obs

    def qp(self, name=None):
        if name is None:
            if not self.qps:
                raise ScenarioError("no QP yet")
            name = next(iter(self.qps))
        if name not in self.qps:
            raise ScenarioError(f"no QP {name}")
        return name, self.qps[name]

    def words(self, step, skip=()):
        """The step's KEY=VALUE words for the agent, $variables substituted."""
        return " ".join(f"{k}={substitute(v, self.env)}" for k, v in step.args.items() if k not in skip)

    # ---- steps ----
    def run(self):
        self.t.injector.call(op="clear")
        # The injector learns the target's MAC from its ARP requests too,
        # but a scenario may inject before the target ever sends.
        self.t.injector.call(op="resolve", ip=TARGET_IP, ms=self.scaled(3000))
        r = self.agent(f"open dev={self.t.dev}", "open")
        self.device = {k: r[k] for k in ("dev", "active_mtu", "max_qp_rd_atom", "device_cap_flags_ex")}
        try:
            for step in self.sc.steps:
                fn = getattr(self, "step_" + step.cmd, None)
                if not fn:
                    raise ScenarioError(f"{step}: unknown step '{step.cmd}'")
                fn(step)
        finally:
            # Whatever the target still sends goes; the QPs go with close.
            self.t.agent.call("close")

    def step_mr(self, step):
        name = step.words[0]
        r = self.agent(f"mr name={name} {self.words(step)}", step)
        for k in ("addr", "lkey", "rkey"):
            self.env[f"{name}.{k}"] = r[k]
        self.keys[r["rkey"]] = f"${name}.rkey"
        self.keys[r["lkey"]] = f"${name}.lkey"

    def step_dereg(self, step):
        self.observe(step, "result", self.verdict(self.agent(f"dereg name={step.words[0]}", step, must=False)))

    def step_qp(self, step):
        name = step.words[0]
        r = self.agent(f"qp name={name} {self.words(step)}", step)
        self.qps[name] = {"type": step.args.get("type", "rc"), "qpn": r["qpn"], "next_psn": None}
        self.env[f"{name}.qpn"] = r["qpn"]

    def step_connect(self, step):
        """INIT, RTR and RTS (or fewer: to=init|rtr) against the injector,
        with the scenario's attributes over the defaults."""
        name = step.words[0]
        _, q = self.qp(name)
        a = dict(step.args)
        upto = a.pop("to", "rts")
        rq_psn = evaluate(a.pop("rq_psn", str(DEFAULT_RQ_PSN)), self.env)
        sq_psn = evaluate(a.pop("sq_psn", str(DEFAULT_SQ_PSN)), self.env)
        self.env[f"{name}.rq_psn"], self.env[f"{name}.sq_psn"] = rq_psn, sq_psn
        q["next_psn"] = rq_psn
        kv = lambda keys: " ".join(f"{k}={substitute(a[k], self.env)}" for k in keys if k in a)
        init = kv(["access", "pkey_index", "qkey"])
        if q["type"] == "ud" and "qkey" not in a:
            init += f" qkey={DEFAULT_QKEY}"
        self.agent(f"modify name={name} state=init {init}", step)
        if upto == "init":
            return
        rtr = kv(["max_dest_rd_atomic", "min_rnr_timer"])
        dqpn = evaluate(a.get("dqpn", str(INJ_QPN)), self.env)
        self.agent(f"modify name={name} state=rtr dest={INJ_IP} dqpn={dqpn} rq_psn={rq_psn} "
                   f"mtu={a.get('mtu', self.sc.mtu)} {rtr}", step)
        if upto == "rtr":
            return
        rts = kv(["timeout", "retry_cnt", "rnr_retry", "max_rd_atomic"])
        self.agent(f"modify name={name} state=rts sq_psn={sq_psn} {rts}", step)

    def verdict(self, r):
        return {"ok": bool(r.get("ok")), "errno": r.get("errno", 0)}

    def step_modify(self, step):
        name = step.words[0]
        if "dest" not in step.args and step.args.get("state") == "rtr":
            step.args["dest"] = INJ_IP
        r = self.agent(f"modify name={name} {self.words(step)}", step, must=False)
        self.observe(step, "result", self.verdict(r))

    def step_ah(self, step):
        self.agent(f"ah name={step.words[0]} dest={INJ_IP} {self.words(step)}", step)

    def step_post_recv(self, step):
        name = step.words[0]
        r = self.agent(f"post_recv name={name} {self.words(step)}", step, must=False)
        if not r.get("ok") or step.args.get("record") == "1":
            self.observe(step, "result", self.verdict(r))

    def step_post_send(self, step):
        name = step.words[0]
        a = dict(step.args)
        r = self.agent(f"post_send name={name} {self.words(step)}", step, must=False)
        if "rkey" in r and "as" in a:
            self.env[a["as"]] = r["rkey"]
            self.keys[r["rkey"]] = "$" + a["as"]
        self.observe(step, "result", self.verdict(r))

    def step_mw(self, step):
        name = step.words[0]
        r = self.agent(f"mw name={name} {self.words(step)}", step)
        self.env[f"{name}.rkey"] = r["rkey"]
        self.keys[r["rkey"]] = f"${name}.rkey"

    def step_bind(self, step):
        name = step.words[0]
        r = self.agent(f"bind name={name} {self.words(step)}", step, must=False)
        if r.get("ok"):
            self.env[f"{name}.rkey"] = r["rkey"]
            self.keys[r["rkey"]] = f"${name}.rkey"
        self.observe(step, "result", self.verdict(r))

    def step_dealloc_mw(self, step):
        r = self.agent(f"dealloc_mw name={step.words[0]}", step, must=False)
        self.observe(step, "result", self.verdict(r))

    def step_write(self, step):
        self.agent(f"write name={step.words[0]} {self.words(step)}", step)

    def step_read(self, step):
        r = self.agent(f"read name={step.words[0]} {self.words(step)}", step)
        self.observe(step, "memory", {"hex": r["hex"]})

    def step_query(self, step):
        r = self.agent(f"query name={step.words[0]}", step, must=False)
        if r.get("ok"):
            v = {k: r[k] for k in ("qp_state", "cur_qp_state", "path_mtu", "rq_psn", "sq_psn",
                                    "dest_qp_num", "qp_access_flags", "max_rd_atomic",
                                    "max_dest_rd_atomic", "min_rnr_timer", "timeout", "retry_cnt",
                                    "rnr_retry", "sq_draining", "qkey")}
            fields = step.args.get("fields")
            if fields:
                v = {k: v[k] for k in fields.split(",")}
        else:
            v = self.verdict(r)
        self.observe(step, "query", v)

    def step_poll(self, step):
        ms = self.scaled(step.args.get("ms", 500))
        r = self.agent(f"poll wait_ms={ms} min={step.args.get('min', 0)}", step)
        wcs = []
        for wc in r["wc"]:
            wc = dict(wc)
            wc.pop("qp_num", None)
            if wc["status"] != "SUCCESS":
                # ibv_poll_cq(3): of a failed completion only wr_id, status,
                # qp_num and vendor_err are valid; the rest is whatever the
                # provider left there.
                wc = {k: wc[k] for k in ("cq", "wr_id", "status", "vendor_err", "qp")}
            # IBV_WC_WITH_INV (1 << 3): imm_data holds the rkey invalidated.
            # rxe's provider passes the kernel's IB_WC_WITH_INVALIDATE
            # (1 << 2, libibverbs' IBV_WC_IP_CSUM_OK) instead: either way the
            # key is named, and wc_flags shows the difference.
            if wc.get("wc_flags", 0) & (4 | 8):
                wc["imm_data"] = self.keys.get(wc["imm_data"], wc["imm_data"])
            wcs.append(wc)
        self.observe(step, "completions", wcs)

    def step_events(self, step):
        ms = self.scaled(step.args.get("ms", 200))
        r = self.agent(f"events wait_ms={ms} min={step.args.get('min', 0)}", step)
        self.observe(step, "events", r["events"])

    def step_sleep(self, step):
        time.sleep(self.scaled(step.args.get("ms", 100)) / 1000)

    def step_inject(self, step):
        """inject OPCODE [to=QP] [psn=] [fields] [mutations]: one frame from
        the injector to the target QP."""
        a = dict(step.args)
        qname, q = self.qp(a.pop("to", None))
        if step.words[0] == "FLUSH":
            # FLUSH (0x1C, IBA's memory placement extension; rxe on 6.12):
            # BTH, FETH, RETH. The packet core knows no FETH, so the frame
            # is a SEND ONLY carrying FETH and RETH as its payload, its
            # opcode then set to FLUSH (the ICRC recomputed).
            ev0 = lambda k: evaluate(a.pop(k, "0"), self.env)
            feth, va, rkey, ln = ev0("feth"), ev0("va"), ev0("rkey"), ev0("len")
            a["payload"] = "hex:" + (feth.to_bytes(4, "big") + va.to_bytes(8, "big") +
                                     rkey.to_bytes(4, "big") + ln.to_bytes(4, "big")).hex()
            a["raw_opcode"] = "0x1c"
            step = Step(step.lineno, step.cmd, step.args, ["SEND_ONLY"] + step.words[1:], step.text)
        opname = short_opcode(step.words[0], q["type"])
        ev = lambda k, d=None: evaluate(a.pop(k), self.env) if k in a else d
        bth = {"opcode": opname, "dqpn": ev("dqpn", q["qpn"]),
               "ack_req": a.pop("ack_req", "auto")}
        if bth["ack_req"] != "auto":
            bth["ack_req"] = evaluate(bth["ack_req"], self.env)
        psn = ev("psn")
        if psn is None:
            if q["next_psn"] is None:
                raise ScenarioError(f"{step}: psn= needed (the QP was not connected)")
            psn = q["next_psn"]
        bth["psn"] = psn & 0xFFFFFF
        for k in ("se", "mig", "tver", "pkey", "fecn", "becn", "resv6", "resv7"):
            if k in a:
                bth[k] = ev(k)
        pkt = {"dst_ip": TARGET_IP, "bth": bth, "sport_qpns": [INJ_QPN, q["qpn"]]}
        for k in ("ip_id", "ttl", "tos", "sport"):
            if k in a:
                pkt[k] = ev(k)
        if "src_ip" in a:
            pkt["src_ip"] = a.pop("src_ip")
        if "va" in a or "rkey" in a or "len" in a:
            if "SWAP" in opname or "FETCH" in opname:
                pkt["atomic"] = {"va": ev("va", 0), "rkey": ev("rkey", 0),
                                 "swap_add": ev("swap", ev("add", 0)), "compare": ev("cmp", 0)}
            else:
                pkt["reth"] = {"va": ev("va", 0), "rkey": ev("rkey", 0), "dma_len": ev("len", 0)}
        if "qkey" in a or "src_qp" in a:
            pkt["deth"] = {"qkey": ev("qkey", DEFAULT_QKEY), "src_qp": ev("src_qp", INJ_QPN)}
        elif opname.startswith("UD_"):
            pkt["deth"] = {"qkey": DEFAULT_QKEY, "src_qp": INJ_QPN}
        if "syndrome" in a:
            pkt["aeth"] = {"syndrome": syndrome(a.pop("syndrome"), self.env), "msn": ev("msn", 0)}
        if "orig" in a:
            pkt["atomic_ack"] = {"orig": ev("orig")}
        if "imm" in a:
            pkt["imm"] = ev("imm")
        if "inv" in a:
            pkt["ieth"] = ev("inv")
        if "payload" in a:
            pl = a.pop("payload")
            if pl.startswith("hex:"):
                pkt["payload"] = pl[4:]
            else:
                pkt["payload"] = {"len": evaluate(pl, self.env), "fill": a.pop("fill", "inc")}
        mutate = {}
        for k in ("raw_opcode", "pad", "truncate", "shorten", "bad_pkey"):
            if k in a:
                mutate[{"raw_opcode": "opcode", "bad_pkey": "pkey"}.get(k, k)] = ev(k)
        if "bad_icrc" in a:
            a.pop("bad_icrc")
            mutate["bad_icrc"] = True
        if "icrc_headers_as_payload" in a:
            a.pop("icrc_headers_as_payload")
            mutate["icrc_headers_as_payload"] = True
        if step.words[1:] == ["bad_icrc"]:
            mutate["bad_icrc"] = True
        if a:
            raise ScenarioError(f"{step}: unknown words {sorted(a)}")
        r = self.t.injector.call(op="send", pkt=pkt, mutate=mutate)
        self.last_send_t = r["t_ns"]
        # The next request PSN: one per packet, and a READ request takes
        # one per response packet it asks for.
        if "RESPONSE" in opname or "ACKNOWLEDGE" in opname:
            pass  # the injector answering the target's requests: no request PSN used
        elif "REQUEST" in opname and "reth" in pkt:
            n = max(1, -(-pkt["reth"]["dma_len"] // self.sc.mtu))
            q["next_psn"] = (psn + n) & 0xFFFFFF
        else:
            q["next_psn"] = (psn + 1) & 0xFFFFFF

    def step_recv(self, step):
        """recv [count=N] [ms=T]: the frames the target sent (to the
        injector) within T ms, or as soon as N of them arrived."""
        want = int(step.args.get("count", 0))
        ms = self.scaled(step.args.get("ms", 300))
        qpns = [q["qpn"] for q in self.qps.values()]
        r = self.t.injector.call(op="recv", ms=ms, max=want, qpns=qpns)
        frames = r["frames"]
        self.last_frames = frames
        if frames:
            f = frames[-1]
            for k in ("psn", "opcode"):
                self.env[f"last.{k}"] = f["bth"][k] if k != "opcode" else 0
            if "reth" in f:
                self.env["last.va"], self.env["last.len"] = f["reth"]["va"], f["reth"]["dma_len"]
        self.observe(step, "frames", [self.normalize_frame(f) for f in frames])
        self.last["t_ns"] = [f["t_ns"] for f in frames]

    def step_discard(self, step):
        """Waits and forgets what came: for frames a scenario does not judge."""
        time.sleep(self.scaled(step.args.get("ms", 200)) / 1000)
        self.t.injector.call(op="clear")

    def normalize_frame(self, f):
        """What may differ between targets goes: times, the IP ID (a counter
        the kernel starts at random; its rule is checked elsewhere), the ICRC
        value (it covers the IP ID; whether it is right stays), whole-frame
        length (Ethernet padding). The UDP source port becomes the rule it
        follows."""
        f = json.loads(json.dumps(f))
        for k in ("t_ns", "hex", "len", "icrc"):
            f.pop(k, None)
        if "ip" in f:
            f["ip"].pop("id", None)
        if "udp" in f:
            rule = f.pop("sport_rule", None)
            if rule:
                kind, _, qpn = rule.partition(":")
                names = [n for n, q in self.qps.items() if str(q["qpn"]) == qpn]
                f["udp"]["sport"] = f"{kind}({names[0] if names else qpn})" if kind != "other" \
                    else f["udp"]["sport"]
        return f

    def step_measure(self, step):
        """measure gaps|since_inject expect=LO..HI: times between the last
        recv's frames (gaps), or from the last injected frame to the first of
        them (since_inject), in ms; each must lie within LO..HI (ms, or given
        as timeout=N: 4.096 us << N, rnr=N: IBA table 45). The numbers are
        kept; the comparison looks only at how many there were and whether
        each held."""
        kind = step.words[0] if step.words else "gaps"
        ts = self.last.get("t_ns", []) if self.last and self.last["kind"] == "frames" else []
        if kind == "gaps":
            vals = [(b - a) / 1e6 for a, b in zip(ts, ts[1:])]
        elif kind == "since_inject":
            vals = [(ts[0] - self.last_send_t) / 1e6] if ts and self.last_send_t is not None else []
        else:
            raise ScenarioError(f"{step}: measure gaps|since_inject")
        lo, hi = self.bounds(step.args.get("expect", "0..1e9"))
        held = [lo <= v <= hi for v in vals]
        obs = self.observe(step, "measure", {"count": len(vals), "held": held})
        obs["ms"] = [round(v, 3) for v in vals]
        obs["bounds_ms"] = [lo, hi]
        if not all(held) or not vals:
            self.failures.append(f"{step}: {['%.2f' % v for v in vals]} ms not within {lo:g}..{hi:g} ms")

    def bounds(self, text):
        lo, _, hi = text.partition("..")
        return self.ms_of(lo), self.ms_of(hi)

    def ms_of(self, text):
        t = text.strip()
        if t.startswith("timeout*"):
            # IBA 11.2.4.2: the local ACK timeout is 4.096 us * 2^timeout.
            f, _, n = t[len("timeout*"):].partition("@")
            return float(f) * 4.096e-3 * (1 << int(n))
        if t.endswith("ms"):
            t = t[:-2]
        return float(t)

    def step_expect(self, step):
        """expect PATH=VALUE ...: checks on the last observation. PATH is
        `count`, or indices and keys into its value (0.bth.opcode,
        1.aeth.msn, status); VALUE a number, a $variable expression, or a
        word compared without regard to case."""
        if not self.last:
            raise ScenarioError(f"{step}: nothing observed yet")
        for path, want in step.args.items():
            got = self.lookup(self.last["value"], path)
            ok = self.matches(got, want)
            if not ok:
                self.failures.append(f"line {step.lineno}: {path} is {got!r}, expected {want}")

    def lookup(self, value, path):
        if path == "count":
            return len(value)
        cur = value
        for part in path.split("."):
            if isinstance(cur, list):
                try:
                    cur = cur[int(part)]
                except (ValueError, IndexError):
                    return None
            elif isinstance(cur, dict):
                if part not in cur:
                    return None
                cur = cur[part]
            else:
                return None
        return cur

    def matches(self, got, want):
        if want.startswith("!"):
            return not self.matches(got, want[1:])
        if isinstance(got, bool):
            return str(int(got)) == want or str(got).lower() == want.lower()
        if isinstance(got, int):
            try:
                return got == evaluate(want, self.env)
            except ScenarioError:
                return False
        if got is None:
            return want in ("none", "null")
        return str(got).lower() == want.lower().replace("_", " ") or str(got).lower() == want.lower()


# --------------------------------------------------------------------------
# Comparing answers

def comparable(answer):
    """The part of an answer that is compared: per observation its kind and
    value (times and measured numbers stay in the answer file only)."""
    return [{"line": o["line"], "step": o["step"], "kind": o["kind"], "value": o["value"]} for o in answer]


def diff(a, b, path=""):
    """Differences between two JSON values as (path, a, b)."""
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k not in a:
                out.append((p, "(absent)", b[k]))
            elif k not in b:
                out.append((p, a[k], "(absent)"))
            else:
                out += diff(a[k], b[k], p)
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            p = f"{path}.{i}" if path else str(i)
            if i >= len(a):
                out.append((p, "(none)", b[i]))
            elif i >= len(b):
                out.append((p, a[i], "(none)"))
            else:
                out += diff(a[i], b[i], p)
    elif a != b:
        out.append((path, a, b))
    return out


def answer_diffs(ref, got):
    """Field-by-field differences, each named by its step's line and text."""
    out = []
    for i in range(max(len(ref), len(got))):
        r = ref[i] if i < len(ref) else None
        g = got[i] if i < len(got) else None
        if r is None or g is None:
            o = r or g
            out.append({"line": o["line"], "step": o.get("step", ""), "kind": o["kind"], "path": "(step)",
                        "ref": "(absent)" if r is None else o["kind"],
                        "got": "(absent)" if g is None else o["kind"]})
            continue
        for p, a, b in diff(r["value"], g["value"]):
            out.append({"line": g["line"], "step": g.get("step", ""), "kind": g["kind"], "path": p,
                        "ref": a, "got": b})
    return out


def excused(d, rules):
    """The declared difference covering d, if any: a path pattern of the
    rule matches the end of d's path (`aeth.msn`, `*` for anything)."""
    for rule in rules:
        if rule.get("kinds") and d.get("kind") not in rule["kinds"]:
            continue
        if not rule["paths"] or "*" in rule["paths"]:
            return rule
        for pat in rule["paths"]:
            rx = "(^|\\.)" + re.escape(pat).replace("\\*", "[^.]*") + "$"
            if re.search(rx, d["path"]) or pat == str(d["line"]):
                return rule
    return None


def short(v, n=60):
    s = json.dumps(v) if not isinstance(v, str) else v
    return s if len(s) <= n else s[:n - 3] + "..."


def describe_diffs(ds, limit=6):
    parts = [f"line {d['line']} {d['path']}: {short(d['ref'])} -> {short(d['got'])}" for d in ds[:limit]]
    if len(ds) > limit:
        parts.append(f"... {len(ds) - limit} more")
    return "; ".join(parts)


# --------------------------------------------------------------------------

def scenario_files(given):
    if given:
        return given
    return sorted(os.path.join(SCENARIO_DIR, f) for f in os.listdir(SCENARIO_DIR) if f.endswith(".scn"))


def results_dir(arg):
    d = arg or os.environ.get("SIMNIC_COVERIFY_RESULTS") or os.path.join(os.getcwd(), "coverify")
    os.makedirs(d, exist_ok=True)
    return d


def reference_path(target, name):
    return os.path.join(REFERENCE_DIR, target, name + ".json")


# Differences every scenario may show, declared once (the scenarios declare
# their own with `differ`).
GLOBAL_DIFFER = [
    {"targets": ["soft", "model"], "paths": ["cur_qp_state"], "kinds": [],
     "reason": "docs/rxe-wire-rules.md#verbs-answers",
     "why": "6.1's rxe answers ibv_query_qp with cur_qp_state RESET whatever the state (6.12 "
            "reports the state); simnic reports the state, as 6.12 does"},
    {"targets": ["soft", "model"], "paths": ["vendor_err"], "kinds": ["completions"],
     "reason": "docs/rxe-wire-rules.md#verbs-answers",
     "why": "a failed completion's vendor_err carries simnic's QP error cause (hw-spec 9.2); "
            "rxe leaves it 0"},
    {"targets": ["soft", "model"], "paths": ["*"], "kinds": ["events"],
     "reason": "docs/rxe-wire-rules.md#verbs-answers",
     "why": "simnic raises the affiliated asynchronous events of IBA 11.6.3 (QP access error, "
            "invalid request error, QP fatal) when a responder error moves a QP to ERROR; rxe "
            "raises none"},
]


def judge(sc, target, run_error, failures, answer):
    """pass, differs (every difference declared, with its reason) or fail."""
    rules = [d for d in sc.differ + GLOBAL_DIFFER if target in d["targets"]]
    if run_error:
        wild = [r for r in rules if (not r["paths"] or "*" in r["paths"]) and not r.get("kinds")]
        if wild:
            return "differs", f"{run_error}", wild[0]["reason"]
        return "fail", run_error, ""
    if failures:
        return "fail", "; ".join(failures[:4]), ""
    # Each kernel is compared with its own recorded answer (a change in
    # rxe's answers shows). simnic is compared with every kernel's answer
    # (the scenario's reference kernel first) and judged by the closest:
    # matching either kernel is matching rxe.
    if target.startswith("rxe-"):
        if not os.path.exists(reference_path(target, sc.name)):
            return "pass", f"no reference answer from {target} recorded yet", ""
        return compare_with(target, sc, answer, rules)[:3]
    kernels = [sc.reference] + [k for k in ("rxe-6.1", "rxe-6.12") if k != sc.reference]
    verdicts = [compare_with(k, sc, answer, rules) for k in kernels
                if os.path.exists(reference_path(k, sc.name))]
    if not verdicts:
        return "fail", "no reference answer from kernel rxe recorded", ""
    rank = {"pass": 0, "differs": 1, "fail": 2}
    best = min(verdicts, key=lambda v: (rank[v[0]], v[3]))
    others = [v[1].split(":", 1)[0] for v in verdicts if v is not best and v[0] != best[0]]
    detail = best[1] + (f" ({'; '.join(others)})" if others else "")
    return best[0], detail, best[2]


def compare_with(ref_target, sc, answer, rules):
    """The verdict of one answer against one kernel's recorded answer."""
    with open(reference_path(ref_target, sc.name)) as f:
        ref = json.load(f)["answer"]
    ds = answer_diffs(ref, comparable(answer))
    if not ds:
        return "pass", f"same as {ref_target}", "", 0
    covered = [(d, excused(d, rules)) for d in ds]
    loose = [d for d, r in covered if r is None]
    if loose:
        return "fail", f"differs from {ref_target}: " + describe_diffs(loose), "", len(ds)
    reasons = []
    for _, r in covered:
        if r["reason"] not in reasons:
            reasons.append(r["reason"])
    return "differs", f"differs from {ref_target}: " + describe_diffs(ds), " ".join(reasons), len(ds)


def run_target(tname, scenarios, tools, args, out_dir, workdir):
    """Brings the target up once and runs every scenario on it."""
    results = []
    # A target that does not come up is tried once more: a VM boot on a
    # loaded host can fail for reasons of the host's (a boot that misses its
    # timeout), and one failed boot would otherwise fail every scenario
    # without one frame sent. Each failure is printed whole.
    for attempt in (1, 2):
        target = make_target(tname, tools, workdir)
        t0 = time.monotonic()
        try:
            target.start()
            break
        except Exception as e:  # noqa: BLE001 - the target never came up
            target.stop()
            log(f"== {tname}: did not start (attempt {attempt} of 2): {e}")
            if attempt == 2:
                for sc in scenarios:
                    if sc.runs_on(tname):
                        results.append((sc, "fail", f"target did not start: {e}", "", None, 0.0))
                return results
    log(f"== {tname}: up in {time.monotonic() - t0:.1f} s")
    try:
        for sc in scenarios:
            if not sc.runs_on(tname):
                continue
            t1 = time.monotonic()
            run = Run(sc, target)
            err = None
            try:
                run.run()
            except ScenarioError as e:
                err = str(e)
            except (OSError, ValueError) as e:
                err = f"{type(e).__name__}: {e}"
            answer = run.answer
            result, detail, reason = judge(sc, tname, err, run.failures, answer)
            dt = time.monotonic() - t1
            log(f"[{result:7}] {sc.name} on {tname} ({dt:.1f} s){': ' + detail if detail else ''}")
            doc = {"scenario": sc.name, "target": tname, "kernel": getattr(target, "kernel_release", None),
                   "device": getattr(run, "device", None), "error": err, "failures": run.failures,
                   "answer": answer}
            adir = os.path.join(out_dir, "answers", tname)
            os.makedirs(adir, exist_ok=True)
            with open(os.path.join(adir, sc.name + ".json"), "w") as f:
                json.dump(doc, f, indent=1)
            if args.record and tname.startswith("rxe-") and not err and not run.failures:
                os.makedirs(os.path.dirname(reference_path(tname, sc.name)), exist_ok=True)
                with open(reference_path(tname, sc.name), "w") as f:
                    json.dump({"scenario": sc.name, "target": tname,
                               "kernel": getattr(target, "kernel_release", None),
                               "answer": comparable(answer)}, f, indent=1)
                    f.write("\n")
            results.append((sc, result, detail, reason, doc, dt))
    finally:
        target.stop()
    return results


def cmd_run(args):
    tools = argparse.Namespace(simnic=args.simnic, verbs=args.verbs, inject=args.inject, agent=args.agent,
                               rig=args.rig, lifetime=args.lifetime)
    scenarios = [Scenario(p) for p in scenario_files(args.scenarios)]
    out_dir = results_dir(args.results)
    workdir = tempfile.mkdtemp(prefix="simnic-coverify-")
    total = {"pass": 0, "differs": 0, "fail": 0}
    t0 = time.monotonic()
    try:
        with open(os.path.join(out_dir, "results.jsonl"), "a") as rf:
            for tname in args.target:
                for sc, result, detail, reason, _, _ in run_target(tname, scenarios, tools, args, out_dir,
                                                                   workdir):
                    total[result] += 1
                    rf.write(json.dumps({"kind": "scenario", "name": sc.name, "target": tname,
                                         "peer": "injector", "mtu": sc.mtu, "role": "", "result": result,
                                         "detail": detail, "reason": reason}) + "\n")
                    rf.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    log(f"coverify: {total['pass']} pass, {total['differs']} differ (with reasons), {total['fail']} fail "
        f"in {time.monotonic() - t0:.1f} s; results in {out_dir}")
    return 1 if total["fail"] else 0


def cmd_list(args):
    for p in scenario_files(args.scenarios):
        sc = Scenario(p)
        print(f"{sc.name}: {' '.join(sc.about)}")
        for d in sc.differ:
            print(f"    differs on {','.join(d['targets'])}: {d['why']} ({d['reason']})")
        for n in sc.rxe_notes:
            print(f"    rxe vs IBA: {n}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[2:]))
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("scenarios", nargs="*")
    p.add_argument("--target", action="append", required=True,
                   choices=["soft", "model", "rxe-6.1", "rxe-6.12"])
    p.add_argument("--record", action="store_true",
                   help="write rxe's answers as the reference (reference/rxe-K/)")
    p.add_argument("--results", help="results directory (default $SIMNIC_COVERIFY_RESULTS or ./coverify)")
    p.add_argument("--simnic", default=os.environ.get("SIMNIC", "simnic"))
    p.add_argument("--verbs", help="libsimnic-verbs.so")
    p.add_argument("--inject", help="simnic-inject")
    p.add_argument("--agent", help="simnic-target built for the host")
    p.add_argument("--rig", default=os.path.join(HERE, "..", "rig", "simnic-rig"))
    p.add_argument("--lifetime", type=int, default=900, help="the rig VM's lifetime, seconds")
    p = sub.add_parser("list")
    p.add_argument("scenarios", nargs="*")
    a = ap.parse_args()
    return {"run": cmd_run, "list": cmd_list}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
