#!/usr/bin/env python3
"""Runs report.py on a small results file (fixture_results.jsonl) and checks
the Markdown it writes: rows per kind and name, the columns a record counts
in (its target, and its peer when that is a column), the last of repeated
runs winning, agreement, reason links, the failure list, the kernels and the
date; and that a malformed results file is an error, not a silent skip."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
REPORT = os.path.join(HERE, "..", "report.py")
FIXTURE = os.path.join(HERE, "fixture_results.jsonl")


def run(results, out):
    return subprocess.run([sys.executable, REPORT, "--results", results, "--out", out,
                           "--date", "2026-12-01"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


def row(text, kind, name):
    """The cells of a table row."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 2 and cells[0] == kind and cells[1] == name:
            return cells
    raise AssertionError(f"no row {kind} {name!r} in:\n{text}")


def main():
    d = tempfile.mkdtemp(prefix="coverify-report-")
    out = os.path.join(d, "coverification.md")
    r = run(FIXTURE, out)
    assert r.returncode == 0, r.stdout
    text = open(out).read()
    header = [c.strip() for c in next(l for l in text.splitlines() if l.startswith("| kind"))
              .strip("|").split("|")]
    assert header == ["kind", "name", "rxe-6.1", "rxe-6.12", "soft", "model", "agree?", "reasons"], header

    # soft and model against 6.1 count under rxe-6.1 (2 runs) and their own
    # columns; soft against 6.12 under rxe-6.12.
    assert row(text, "interop", "ibv_rc_pingpong 1 byte")[2:8] == [
        "pass 2", "pass 1", "pass 2", "pass 1", "yes", ""], row(text, "interop", "ibv_rc_pingpong 1 byte")
    # The re-run replaced the failed first run.
    assert row(text, "interop", "ib_read_bw")[2:7] == ["–", "pass 1", "–", "pass 1", "yes"]
    assert "first try" not in text
    # A failure: the row does not agree and the run is listed with its detail.
    cells = row(text, "interop", "ib_send_bw")
    assert cells[2:7] == ["**fail** 1/1", "–", "**fail** 1/1", "–", "**no**"], cells
    assert ("- interop **ib_send_bw**, soft, with rxe-6.1, MTU 1024, simnic-server: fail: "
            "server rc 1: Couldn't | post") in text, text
    # A deliberate difference with its reason agrees, linked relative to docs/;
    # the injector is no column.
    cells = row(text, "scenario", "duplicate READ re-executed")
    assert cells[2:8] == ["pass 1", "–", "differs 1/1", "–", "yes",
                          "[rxe-wire-rules.md#ip-identification](rxe-wire-rules.md#ip-identification)"], cells
    # A difference without a reason does not.
    assert row(text, "scenario", "ghost ACK")[6] == "**no**"
    # A workload between soft and model counts in both.
    assert row(text, "workload", "seeds 1-10")[2:7] == ["–", "–", "pass 1", "pass 1", "yes"]
    # Interop rows first, then scenarios, then workloads.
    order = [l.split("|")[1].strip() for l in text.splitlines() if l.startswith("| ") and
             l.split("|")[1].strip() in ("interop", "scenario", "workload")]
    assert order == sorted(order, key=["interop", "scenario", "workload"].index), order
    # Totals per column, kernels and date.
    assert "| soft | 3 | 1 | 1 |" in text, text
    assert "| rxe-6.1 | 3 | 0 | 1 |" in text, text
    assert "6 rows, 9 runs; 4 rows agree, 2 do not." in text, text
    assert "- rxe-6.1: 6.1.0-57-amd64" in text and "- rxe-6.12: 6.12.95+deb12-amd64" in text
    assert "- generated 2026-12-01 (runs from 2026-12-01T20:00:00Z to 2026-12-01T20:10:00Z)" in text

    # Malformed input is an error naming the line.
    bad = os.path.join(d, "bad.jsonl")
    with open(bad, "w") as f:
        f.write(open(FIXTURE).readline())
        f.write('{"kind": "interop", "name": "x", "target": "soft", "result": "maybe"}\n')
    r = run(bad, os.path.join(d, "bad.md"))
    assert r.returncode != 0 and "bad.jsonl:2" in r.stdout and "maybe" in r.stdout, r.stdout
    with open(bad, "w") as f:
        f.write("not json\n")
    r = run(bad, os.path.join(d, "bad.md"))
    assert r.returncode != 0 and "bad.jsonl:1: not JSON" in r.stdout, r.stdout
    print("ok: report.py renders the fixture as expected and refuses malformed results")


if __name__ == "__main__":
    main()
