#!/usr/bin/env python
"""Generate the op coverage table (torchneuron/lowering/op_table.py) and docs/op_coverage.md.

Every OpInfo op (torch.testing._internal.common_methods_invocations.op_db) is run, per dtype (float32 and
bfloat16), on its first few CPU samples under a dispatch mode that sends *every ATen op the sample executes*
(the checker is torchneuron.testing.opinfo_sweep, which tests use too) through the strict-eager path
(single-op lowering → StableHLO → XLA:CPU) and compares each result with CPU
eager. An OpInfo op is

- ``lowered``    every ATen op it runs lowers and matches CPU;
- ``mismatched`` everything lowers, some result differs beyond tolerance (the cause is listed);
- ``missing``    some ATen op it runs has no lowering (named, with the reason).

Per ATen overload the table records ``lowered`` / ``mismatch`` / ``missing`` (and the runtime ops: views,
allocation, copies), which is what ``torchneuron.fallback_ops()`` and the op policy read. The ATen ops of each
differentiable op's backward are recorded and checked the same way; they count per overload only (an OpInfo
op's status is a forward measure).

Workers run in subprocesses (a native crash in a compiler marks that op ``missing`` and the sweep goes on).

    python tools/gen_op_coverage.py                       # full sweep (~20-40 min on 2 cores)
    python tools/gen_op_coverage.py --ops add,mul,sin     # a subset (writes nothing unless --write)
    python tools/gen_op_coverage.py --doc-only            # regenerate the doc from the table
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's torchneuron, also for the worker processes started below

from torchneuron.testing.coverage_doc import render_doc, summary  # noqa: E402
from torchneuron.testing.opinfo_sweep import (DTYPES, PROBE_PREFIX, RUNTIME_OPS, OpChecker, all_names, clip,  # noqa: E402
                                              op_cause, op_key, op_status, probes)

ROOT = Path(__file__).resolve().parents[1]


TABLE = ROOT / "torchneuron" / "lowering" / "op_table.py"


DOC = ROOT / "docs" / "op_coverage.md"


# ------------------------------------------------------------------------------------------------ worker
def _worker(names: list[str], dtypes: list[str], max_samples: int, out: Path, timeout: int) -> None:
    from torch.testing._internal.common_methods_invocations import op_db

    from torchneuron.lowering import fx_to_stablehlo

    fx_to_stablehlo.ISOLATE = False  # this worker is disposable: a compiler crash is caught by the parent
    by_name = {op_key(o): o for o in op_db}
    by_name.update(probes())
    check = OpChecker(timeout).check
    with open(out, "a") as f:
        for nm in names:
            op = by_name[nm]
            result = {"op": nm, "dtypes": {dt: check(op, dt, max_samples) for dt in dtypes}}
            f.write(json.dumps(result) + "\n")
            f.flush()


class _Watched:
    def __init__(self, returncode: int, stderr: str):
        self.returncode, self.stderr = returncode, stderr


def _run_watched(cmd: list[str], env: dict, out: Path, stall: int) -> _Watched:
    """Run a worker; kill it when the results file stops growing for ``stall`` seconds (a hang in native code
    is out of reach of the worker's own SIGALRM)."""
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    last, since = -1, time.time()
    while proc.poll() is None:
        time.sleep(2)
        size = out.stat().st_size if out.exists() else 0
        if size != last:
            last, since = size, time.time()
        elif time.time() - since > stall:
            proc.kill()
            proc.wait()
            err.close()
            return _Watched(-9, f"hung for {stall}s (killed)")
    err.seek(0)
    text = err.read().decode(errors="replace")
    err.close()
    return _Watched(proc.returncode, text)


def sweep(names: list[str], dtypes: list[str], max_samples: int, timeout: int, chunk: int) -> list[dict]:
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.jsonl"
        pending = list(names)
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.setdefault("TORCHNEURON_CACHE_DIR", str(Path(tmp) / "cache"))
        while pending:
            batch = pending[:chunk]
            cmd = [sys.executable, __file__, "--worker", "--ops", ",".join(batch), "--dtypes", ",".join(dtypes),
                   "--max-samples", str(max_samples), "--results", str(out), "--timeout", str(timeout)]
            proc = _run_watched(cmd, env, out, stall=timeout * len(dtypes) + 60)
            done = set()
            if out.exists():
                for line in out.read_text().splitlines():
                    r = json.loads(line)
                    results[r["op"]] = r
                    done.add(r["op"])
            remaining = [n for n in batch if n not in done]
            if remaining and proc.returncode != 0:
                crashed = remaining[0]
                why = clip((proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1], 200)
                results[crashed] = {"op": crashed, "dtypes": {d: {"status": "missing", "events": [
                    ["(crash)", "missing", f"worker died (exit {proc.returncode}): {why}"]]} for d in dtypes}}
                remaining = remaining[1:]
            pending = remaining + pending[chunk:]
            print(f"[{len(results)}/{len(names)}] {time.strftime('%H:%M:%S')}", file=sys.stderr, flush=True)
    return [results[n] for n in names if n in results]


def build_table(results: list[dict]) -> dict:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    causes: dict[str, str] = {}
    runtime: set[str] = set(RUNTIME_OPS)
    random: set[str] = set()
    for r in results:
        for dt in r["dtypes"].values():
            for name, status, cause in list(dt["events"]) + list(dt.get("grad_events", [])):
                if name.startswith("("):
                    continue
                if status == "runtime":
                    runtime.add(name)
                    continue
                if status == "random":
                    random.add(name)
                    continue
                counts[name][status] += 1
                if status != "lowered" and name not in causes:
                    causes[name] = cause
    overloads = {}
    for name, c in sorted(counts.items()):
        if c["lowered"] + c["mismatch"] == 0:
            overloads[name] = "missing"
        elif c["mismatch"]:
            overloads[name] = "mismatch"
        else:
            overloads[name] = "lowered"
            if c["missing"]:
                causes[name] = "partial: " + causes.get(name, "")
    opinfo = {r["op"]: {d: (op_status(v), op_cause(v)) for d, v in r["dtypes"].items()} for r in results
              if not r["op"].startswith(PROBE_PREFIX)}
    return {"OVERLOADS": overloads, "CAUSES": {k: v for k, v in sorted(causes.items()) if k in overloads},
            "RUNTIME": sorted(runtime - set(overloads)), "RANDOM": sorted(random - set(overloads)), "OPINFO": opinfo}


def write_table(table: dict, meta: dict) -> None:
    lines = ['"""Generated by tools/gen_op_coverage.py; do not edit.', "",
             "The single source of truth for op coverage: read by torchneuron.lowering.coverage (fallback_ops(),",
             'the op policy) and rendered into docs/op_coverage.md."""', "",
             f"GENERATED: dict[str, str] = {meta!r}", "",
             "# ATen overload -> lowered | mismatch | missing", "OVERLOADS: dict[str, str] = {"]
    lines += [f"    {k!r}: {v!r}," for k, v in table["OVERLOADS"].items()]
    lines += ["}", "", "# why an overload is not plainly lowered", "CAUSES: dict[str, str] = {"]
    lines += [f"    {k!r}: {v!r}," for k, v in table["CAUSES"].items()]
    lines += ["}", "", "# runtime operations (allocation, copies, views, scalar reads): never compiled",
              "RUNTIME: frozenset[str] = frozenset({"]
    lines += [f"    {k!r}," for k in table["RUNTIME"]]
    lines += ["})", "", "# random ops: values come from the device generator (no StableHLO RNG lowering yet)",
              "RANDOM: frozenset[str] = frozenset({"]
    lines += [f"    {k!r}," for k in table["RANDOM"]]
    lines += ["})", "", "# OpInfo op -> dtype -> (lowered | mismatched | missing | random | n/a, cause)",
              "OPINFO: dict[str, dict[str, tuple[str, str]]] = {"]
    for k, v in table["OPINFO"].items():
        lines.append(f"    {k!r}: {{{', '.join(f'{d!r}: {tuple(s)!r}' for d, s in v.items())}}},")
    lines += ["}", ""]
    TABLE.write_text("\n".join(lines))


def _previous_meta() -> dict | None:
    import torchneuron.lowering.op_table as t

    return dict(t.GENERATED) or None


def write_doc() -> None:
    import importlib

    import torchneuron.lowering.op_table as t

    importlib.reload(t)
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(render_doc(t))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", default="", help="comma-separated OpInfo names (default: all)")
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--max-samples", type=int, default=3)
    p.add_argument("--timeout", type=int, default=120, help="seconds per op and dtype")
    p.add_argument("--chunk", type=int, default=40, help="ops per worker process")
    p.add_argument("--write", action="store_true", help="write table and doc even for a subset")
    p.add_argument("--doc-only", action="store_true")
    p.add_argument("--json", default="", help="also dump raw results here")
    p.add_argument("--from-json", default="", help="rebuild table and doc from a --json dump (no sweep)")
    p.add_argument("--merge-json", default="", help="re-run --ops, replace their entries in this --json dump, "
                                                    "save it, and rebuild table and doc from all of it")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--results", default="", help=argparse.SUPPRESS)
    a = p.parse_args()
    dtypes = a.dtypes.split(",")
    if a.worker:
        _worker(a.ops.split(","), dtypes, a.max_samples, Path(a.results), a.timeout)
        return
    if a.doc_only:
        write_doc()
        return
    names = a.ops.split(",") if a.ops else all_names()
    t0 = time.time()
    if a.from_json:
        results = json.loads(Path(a.from_json).read_text())
        previous = _previous_meta()
    elif a.merge_json:
        fresh = {r["op"]: r for r in sweep(names, dtypes, a.max_samples, a.timeout, a.chunk)}
        old = json.loads(Path(a.merge_json).read_text())
        results = [fresh.pop(r["op"], r) for r in old] + list(fresh.values())
        Path(a.merge_json).write_text(json.dumps(results, indent=1))
        previous = _previous_meta()
        a.write = True
    else:
        results = sweep(names, dtypes, a.max_samples, a.timeout, a.chunk)
        previous = None
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    table = build_table(results)
    for dt in dtypes:
        print(dt, summary(table["OPINFO"], dt))
    if a.ops and not a.write:
        for r in results:
            for d, v in r["dtypes"].items():
                print(r["op"], d, v["status"], op_cause(v))
        return
    import torch
    from importlib import metadata

    meta = previous or {"torch": torch.__version__, "torch-mlir": metadata.version("torch-mlir"),
                        "jaxlib": metadata.version("jaxlib"), "samples per op": str(a.max_samples),
                        "sweep seconds": f"{time.time() - t0:.0f}"}
    write_table(table, meta)
    write_doc()


if __name__ == "__main__":
    main()
