#!/usr/bin/env python3
"""Runs the command blocks of the user guides, as a reader would type them.

A guide marks each shell block:

    ```sh {test}              run it; it must exit 0
    ```sh {test exit=N}       run it; it must exit N
    ```sh {notest: REASON}    not run (another host, a GUI, VMs); the reason is printed

and may follow a {test} block with the output it shows:

    ```text {output}
    link rxe_lo/1 state ACTIVE physical_state LINK_UP netdev lo
    ... tx_packets ...
    ```

Every line of an {output} block must appear in the block's output (stdout and
stderr together), in order; `...` in a line stands for anything. A shell
block with neither marker is an error, so that nothing in a guide is
untested by accident.

Blocks run in order, each in a fresh `bash -e -o pipefail`, all in one
directory of their own whose entries link to the source tree's (so that
testbench/golden/... and build/... resolve as in a clone), with `simnic` on
PATH, a private runtime directory (so a private daemon), in a network
namespace of their own (and a user namespace when not root). Whatever a
block leaves running is killed when it ends; the daemon is stopped at the end.

    test_guide.py SIMNIC LIBSIMNIC_VERBS SOURCE_DIR GUIDE.md...
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\S*)\s*(\{[^}]*\})?\s*$")


def blocks(path):
    """(line, kind, attrs, text) for every fenced block of the file."""
    out, cur = [], None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if cur is None:
                m = FENCE.match(line)
                if m:
                    cur = (n, m.group(1), (m.group(2) or "").strip("{}").strip(), [])
                continue
            if line.startswith("```"):
                out.append((cur[0], cur[1], cur[2], "\n".join(cur[3])))
                cur = None
            else:
                cur[3].append(line)
    return out


def line_matches(want, got):
    parts = [re.escape(p.strip()) for p in want.split("...")]
    return re.search(r".*".join(p for p in parts if p) or ".*", got) is not None


def check_output(expected, output):
    """The first expected line not found in order, or None."""
    lines = output.splitlines()
    i = 0
    for want in [w for w in expected.splitlines() if w.strip()]:
        while i < len(lines) and not line_matches(want, lines[i]):
            i += 1
        if i == len(lines):
            return want
        i += 1
    return None


def main():
    if not os.environ.get("SIMNIC_GUIDE_NS"):
        os.environ["SIMNIC_GUIDE_NS"] = "1"
        ns = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--net"]
        os.execvp(ns[0], ns + [sys.executable] + sys.argv)
    simnic, lib, src = (os.path.abspath(a) for a in sys.argv[1:4])
    guides = sys.argv[4:]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    work = tempfile.mkdtemp(prefix="simnic-guide.")
    os.chmod(work, 0o755)
    cwd = os.path.join(work, "clone")
    os.mkdir(cwd)
    build = os.path.dirname(os.path.dirname(simnic))  # build/cli/simnic
    for e in os.listdir(src):
        if e not in ("build", ".git"):
            os.symlink(os.path.join(src, e), os.path.join(cwd, e))
    os.symlink(build, os.path.join(cwd, "build"))
    rt = os.path.join(work, "rt")
    os.mkdir(rt, 0o700)
    env = dict(os.environ, PATH=os.path.dirname(simnic) + ":" + os.environ.get("PATH", ""),
               SIMNIC_VERBS_LIB=lib, SIMNIC_RUNTIME_DIR=rt, HOME=work)
    env.pop("LD_PRELOAD", None)

    ran = passed = 0
    failures, untested = [], []
    try:
        for guide in guides:
            name = os.path.basename(guide)
            bl = blocks(guide)
            for k, (line, kind, attrs, text) in enumerate(bl):
                if kind not in ("sh", "bash"):
                    continue
                where = f"{name}:{line}"
                if attrs.startswith("notest"):
                    reason = attrs.partition(":")[2].strip()
                    if not reason:
                        failures.append(f"{where}: {{notest}} needs a reason")
                    untested.append(f"{where}: {reason}")
                    continue
                m = re.fullmatch(r"test(?:\s+exit=(\d+))?", attrs)
                if not m:
                    failures.append(f"{where}: a shell block must be marked {{test}} or {{notest: REASON}}")
                    continue
                want_rc = int(m.group(1) or 0)
                expected = None
                if k + 1 < len(bl) and bl[k + 1][1] == "text" and bl[k + 1][2] == "output":
                    expected = bl[k + 1][3]
                ran += 1
                p = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", text], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
                try:
                    out, _ = p.communicate(timeout=180)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    out, _ = p.communicate()
                    p.returncode = "timeout"
                try:
                    os.killpg(p.pid, signal.SIGKILL)  # what the block left running
                except ProcessLookupError:
                    pass
                print(f"--- {where} (exit {p.returncode})\n$ " + text.replace("\n", "\n$ ") + "\n" + out.rstrip())
                if p.returncode != want_rc:
                    failures.append(f"{where}: exited {p.returncode}, expected {want_rc}")
                    continue
                if expected is not None:
                    missing = check_output(expected, out)
                    if missing is not None:
                        failures.append(f"{where}: output lacks '{missing}'")
                        continue
                passed += 1
    finally:
        subprocess.run([simnic, "daemon", "--stop"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{passed} of {ran} blocks passed; {len(untested)} not run:")
    for u in untested:
        print("  " + u)
    for f in failures:
        print("FAIL: " + f)
    return 0 if not failures and passed == ran else 1


if __name__ == "__main__":
    sys.exit(main())
