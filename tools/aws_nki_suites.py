#!/usr/bin/env python
"""Run AWS's public NKI tests and examples, unmodified, on torchneuron's NKI simulator.

Give it your own checkouts (nothing of AWS's is shipped here):

    python tools/aws_nki_suites.py --sdk ~/src/aws-neuron-sdk --samples ~/src/nki-samples --json out.json

Each file runs in its own child process (with a timeout, a scratch HOME) and `TORCHNEURON_NKI_ALIASES=1`,
so `import neuronxcc.nki` / `import nki` resolve to the simulator. pytest files report one row per test id;
scripts (`python file.py`) one row per file. A failure to import a framework integration the simulator
cannot stand in for (torch_xla, jax_neuronx, torch-neuronx's XLA `nki_jit`) is "needs-hardware"; only such
import failures are matched, so a simulator error is never hidden. A file with no entry point (kernels
only) is "no-entry". Prints a table of suite x status and writes every row as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# output that means the file needs a framework device, the real compiler or hardware (not the simulator)
# (torch-neuronx's nki_jit and xla_impl belong to its XLA integration, which needs torch_xla as well)
NEEDS_HW = re.compile(r"No module named '(torch_xla|jax_neuronx|libneuronxla|neuronxcc\.nki\.docs"
                      r"|torch_neuronx\.xla_impl)"
                      r"|cannot import name 'nki_jit' from 'torch_neuronx'|torch_neuronx\.xla_impl belongs to the XLA")
PYTEST_ROW = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)(?: - (.*))?$", re.M)
STATUS = {"PASSED": "passed", "XPASS": "passed", "FAILED": "failed", "ERROR": "failed",
          "SKIPPED": "skipped", "XFAIL": "skipped"}


def env_for(extra_paths: list[Path]) -> dict[str, str]:
    # COLUMNS: pytest cuts the reason off its summary rows at the terminal width
    env = dict(os.environ, TORCHNEURON_NKI_ALIASES="1", PYTHONDONTWRITEBYTECODE="1", COLUMNS="1000")
    paths = [str(ROOT)] + [str(p) for p in extra_paths] + [env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str, float]:
    t0 = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as home:  # profiles write under ~ and refuse to overwrite
            p = subprocess.run(cmd, cwd=cwd, env=dict(env, HOME=home), capture_output=True, text=True,
                               timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return None, out + f"\n[timeout after {timeout:.0f} s]", time.monotonic() - t0


def last_error(out: str) -> str:
    lines = out.strip().splitlines()
    errors = [ln for ln in lines if re.match(r"^[\w.]*(Error|Exception)\b|^E  ", ln)]
    return (errors or lines or [""])[-1][:300]


def classify(ok: bool, out: str) -> str:
    return "passed" if ok else ("needs-hardware" if NEEDS_HW.search(out) else "failed")


def pytest_file(suite: str, f: Path, args: argparse.Namespace, env: dict[str, str], extra: list[str]) -> list[dict]:
    cmd = [args.python, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", f.name] + extra
    rc, out, secs = run(cmd, f.parent, env, args.timeout)
    rows = []
    for status, test_id, reason in PYTEST_ROW.findall(out):
        st = STATUS[status]
        if st == "failed" and not reason and test_id == f.name:  # a collection error: its reason is above
            reason = last_error(out)
        if st == "failed" and NEEDS_HW.search(reason or ""):
            st = "needs-hardware"
        rows.append({"suite": suite, "file": str(f), "id": test_id, "status": st, "reason": reason or ""})
    if not rows and rc == 5:  # pytest's "no tests collected": a file of kernels only
        rows.append({"suite": suite, "file": str(f), "id": f.name, "status": "no-entry", "reason": "no tests"})
    elif not rows:  # collection error, timeout, crash: one row for the file
        rows.append({"suite": suite, "file": str(f), "id": f.name, "status": classify(rc == 0, out),
                     "reason": last_error(out)})
    for r in rows:
        r["seconds"] = round(secs / len(rows), 2)
    return rows


def script_file(suite: str, f: Path, args: argparse.Namespace, env: dict[str, str]) -> list[dict]:
    text = f.read_text(errors="replace")
    top_level_call = re.search(r"^[A-Za-z_][\w.]*\(.*\)\s*$", text, re.M)  # a module-level call runs something
    if "__main__" not in text and not top_level_call:
        return [{"suite": suite, "file": str(f), "id": f.name, "status": "no-entry", "reason": "kernel module only",
                 "seconds": 0.0}]
    rc, out, secs = run([args.python, f.name], f.parent, env, args.timeout)
    st = classify(rc == 0, out)
    return [{"suite": suite, "file": str(f), "id": f.name, "status": st,
             "reason": "" if st == "passed" else last_error(out), "seconds": round(secs, 2)}]


def jobs(args: argparse.Namespace) -> list[tuple[str, Path, str, list[Path], list[str]]]:
    """(suite, file, kind, extra PYTHONPATH, extra pytest args) for every file to run."""
    out = []
    if args.sdk:
        nki = Path(args.sdk) / "general" / "nki"
        out += [("sdk/test", f, "pytest", [], []) for f in sorted((nki / "test").glob("test_*.py"))]
        out += [("sdk/examples", f, "script", [], []) for f in sorted((nki / "examples").rglob("*.py"))]
    if args.samples:
        s = Path(args.samples)
        src = [s / "src"]
        out += [("samples/unit", f, "pytest", src, ["--simulation-only"])
                for f in sorted((s / "test" / "unit").rglob("test_*.py"))]
        out += [("samples/reference", f, "script", src, [])
                for f in sorted((s / "src" / "nki_samples" / "reference").rglob("*.py")) if f.name != "__init__.py"]
        out += [("samples/tutorials", f, "script", src, [])
                for f in sorted((s / "src" / "nki_samples" / "tutorials").rglob("*.py")) if f.name != "__init__.py"]
    if args.k:
        out = [j for j in out if args.k in str(j[1])]
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sdk", help="checkout of aws-neuron/aws-neuron-sdk (runs general/nki/test and examples)")
    p.add_argument("--samples", help="checkout of aws-neuron/nki-samples (test/unit, reference, tutorials)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per file (default 900)")
    p.add_argument("--json", help="write every row here")
    p.add_argument("-k", default="", help="only files whose path contains this")
    p.add_argument("--python", default=sys.executable, help="interpreter for the child processes")
    args = p.parse_args()
    if not (args.sdk or args.samples):
        p.error("give --sdk and/or --samples")
    rows: list[dict] = []
    for suite, f, kind, paths, extra in jobs(args):
        env = env_for(paths)
        new = pytest_file(suite, f, args, env, extra) if kind == "pytest" else script_file(suite, f, args, env)
        for r in new:
            print(f"{r['status']:>14}  {r['seconds']:7.1f}s  {suite}  {r['id']}  {r['reason'][:120]}", flush=True)
        rows += new
    cols = ["passed", "failed", "needs-hardware", "skipped", "no-entry"]
    print(f"\n{'suite':<20}" + "".join(f"{c:>16}" for c in cols))
    for suite in dict.fromkeys(r["suite"] for r in rows):
        n = [sum(1 for r in rows if r["suite"] == suite and r["status"] == c) for c in cols]
        print(f"{suite:<20}" + "".join(f"{x:>16}" for x in n))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if not any(r["status"] == "failed" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
