#!/usr/bin/env python3
"""report.py [--results FILE] [--out FILE] [--date YYYY-MM-DD]: renders the
co-verification report (docs/coverification.md, issue 10 section 7) from the
results every harness appends to results.jsonl (format:
tools/COVERIFY-RESULTS.md; default file $SIMNIC_COVERIFY_RESULTS/results.jsonl,
else coverify/results.jsonl). Python 3 standard library only.

One row per (kind, name); one column per target: rxe-6.1, rxe-6.12, soft,
model. A record counts in its target's column and, when its peer is one of
those four (an interop run of soft against rxe-6.1), in its peer's column
too. When several records share kind, name, target, peer, MTU and role, the
last one in the file counts (a re-run replaces the earlier result). A row
agrees when none of its records failed and every deliberate difference
("differs") names its reason; the reasons are linked. Below the table: every
failure and difference with its detail, the kernel versions (records may
carry a "kernel" field) and the date."""

import argparse
import datetime
import json
import os
import sys

COLUMNS = ("rxe-6.1", "rxe-6.12", "soft", "model")
RESULTS = ("pass", "differs", "fail")
KIND_ORDER = {"interop": 0, "scenario": 1, "workload": 2}


def load(path):
    """The records of a results file, the last of each run key kept, in the
    order of their first appearance. Malformed lines are errors: a harness
    that writes them must be fixed, not ignored."""
    latest, order = {}, []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON: {e}")
            for k in ("kind", "name", "target", "result"):
                if not isinstance(r.get(k), str) or not r[k]:
                    sys.exit(f"{path}:{n}: no '{k}'")
            if r["result"] not in RESULTS:
                sys.exit(f"{path}:{n}: result {r['result']!r} is not one of {', '.join(RESULTS)}")
            key = (r["kind"], r["name"], r["target"], r.get("peer", ""), r.get("mtu"),
                   r.get("role", ""))
            if key not in latest:
                order.append(key)
            latest[key] = r
    return [latest[k] for k in order]


def link(reason):
    """A reason as a Markdown link relative to docs/ (where the report is)."""
    if reason.startswith(("http://", "https://")):
        return f"[{reason}]({reason})"
    target = reason[len("docs/"):] if reason.startswith("docs/") else "../" + reason
    return f"[{reason.split('/')[-1]}]({target})"


def cell(records):
    if not records:
        return "–"
    n = {r: sum(x["result"] == r for x in records) for r in RESULTS}
    total = len(records)
    if n["fail"]:
        return f"**fail** {n['fail']}/{total}"
    if n["differs"]:
        return f"differs {n['differs']}/{total}"
    return f"pass {total}"


def agrees(records):
    return all(r["result"] == "pass" or (r["result"] == "differs" and r.get("reason"))
               for r in records)


def describe(r):
    bits = [r["target"]]
    if r.get("peer"):
        bits.append(f"with {r['peer']}")
    if r.get("mtu"):
        bits.append(f"MTU {r['mtu']}")
    if r.get("role"):
        bits.append(r["role"])
    return ", ".join(bits)


def render(records, date):
    rows = {}
    for r in records:
        rows.setdefault((r["kind"], r["name"]), []).append(r)
    keys = sorted(rows, key=lambda k: (KIND_ORDER.get(k[0], 9), k[0]))  # stable: names keep run order
    out = ["# Co-verification of simnic with kernel rxe", "",
           "Written by `testbench/coverify/report.py` from the harnesses' `results.jsonl`; do not "
           "edit by hand. A row is one interop test, scenario or workload; a column counts the "
           "runs it took part in (an interop run of `soft` against kernel 6.1 counts under both "
           "`soft` and `rxe-6.1`). *pass N*: all N runs passed; *differs k/N*: k runs showed a "
           "deliberate difference, linked under *reasons*; ***fail** k/N*: k runs failed (listed "
           "below the table). A row agrees when nothing failed and every difference has its "
           "reason.", "",
           "| kind | name | " + " | ".join(COLUMNS) + " | agree? | reasons |",
           "| --- | --- | " + " | ".join("---" for _ in COLUMNS) + " | --- | --- |"]
    totals = {c: dict.fromkeys(RESULTS, 0) for c in COLUMNS}
    disagree = 0
    for key in keys:
        recs = rows[key]
        cols = {c: [r for r in recs if c in (r["target"], r.get("peer"))] for c in COLUMNS}
        for c in COLUMNS:
            for r in cols[c]:
                totals[c][r["result"]] += 1
        ok = agrees(recs)
        disagree += not ok
        reasons = sorted({r["reason"] for r in recs if r.get("reason")})
        name = key[1].replace("|", "\\|")
        out.append(f"| {key[0]} | {name} | " + " | ".join(cell(cols[c]) for c in COLUMNS)
                   + f" | {'yes' if ok else '**no**'} | " + ", ".join(link(x) for x in reasons)
                   + " |")
    out += ["", f"{len(keys)} rows, {len(records)} runs; {len(keys) - disagree} rows agree, "
            f"{disagree} do not.", "", "| column | pass | differs | fail |", "| --- | --- | --- | --- |"]
    for c in COLUMNS:
        out.append(f"| {c} | " + " | ".join(str(totals[c][r]) for r in RESULTS) + " |")

    odd = [r for r in records if r["result"] != "pass"]
    out += ["", "## Failures and differences", ""]
    if not odd:
        out.append("None.")
    for r in odd:
        detail = " ".join(str(r.get("detail", "")).split())
        if len(detail) > 400:
            detail = detail[:400] + " ..."
        reason = f" ({link(r['reason'])})" if r.get("reason") else ""
        out.append(f"- {r['kind']} **{r['name']}**, {describe(r)}: {r['result']}{reason}: {detail}")

    kernels = {}
    for r in records:
        if r.get("kernel"):
            for c in ("rxe-6.1", "rxe-6.12"):
                if c in (r["target"], r.get("peer")):
                    kernels.setdefault(c, set()).add(r["kernel"])
    out += ["", "## Kernels and date", ""]
    for c in ("rxe-6.1", "rxe-6.12"):
        out.append(f"- {c}: " + (", ".join(sorted(kernels[c])) if c in kernels else "not recorded"))
    stamps = sorted(r["date"] for r in records if r.get("date"))
    span = f" (runs from {stamps[0]} to {stamps[-1]})" if stamps else ""
    out += [f"- generated {date}{span}", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = os.path.join(os.environ.get("SIMNIC_COVERIFY_RESULTS") or "coverify", "results.jsonl")
    ap.add_argument("--results", default=default)
    ap.add_argument("--out", default="docs/coverification.md")
    ap.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"))
    a = ap.parse_args()
    if not os.path.exists(a.results):
        sys.exit(f"no results file {a.results}")
    records = load(a.results)
    if not records:
        sys.exit(f"{a.results} holds no results")
    text = render(records, a.date)
    with open(a.out, "w") as f:
        f.write(text)
    print(f"{a.out}: {len(records)} runs from {a.results}")


if __name__ == "__main__":
    main()
