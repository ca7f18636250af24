"""Counts OpInfo conformance on neuron: pass/fail/skip per dtype, per sample.

    python -m tests.conformance.report                 # CI subset, float32 + bfloat16
    python -m tests.conformance.report --full          # every op in op_db, every dtype the op has
    python -m tests.conformance.report --full --dtypes float32,bfloat16 --json out.json
    python -m tests.conformance.report --ops add,mm --kinds sample,grad -v
    python -m tests.conformance.report --eager lowered # strict eager: every op through StableHLO + XLA:CPU
    python -m tests.conformance.report --full --dtypes float32 --kinds compiled --max-samples 1
                                                       # each op inside torch.compile(backend="neuron")

A sample counts once per kind of check (sample, noncontig, out, inplace, grad). "pass %" is
pass / (pass + fail): skips are samples a check does not apply to (no out= form, the CPU itself rejects
the sample, an entry in known_failures.SKIP). Failures listed in known_failures.XFAIL are counted as
failures (they are real) and reported apart from unexpected ones; the exit status is 1 when any failure is
unexpected.

``--eager lowered`` runs the same checks with ``TORCHNEURON_EAGER=lowered`` (strict eager mode), so that mode
has a pass rate of its own; ``--eager`` defaults to the environment's ``TORCHNEURON_EAGER`` (host). Ops with
no lowering still run (on the host, as the mode does) and are counted like any other; their number is printed.

The ops run in a worker process; if an op kills it (a crash is a bug, and must not hide the other ops'
results), the op is counted as failed ("crashed") and a new worker continues with the next op.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

from tests.conformance import harness, known_failures, selection


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name.strip().replace("torch.", ""), None)
    if not isinstance(dtype, torch.dtype):
        raise SystemExit(f"unknown dtype {name!r} (use torch names: float32, bfloat16, int64, ...)")
    return dtype


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--full", action="store_true", help="all of op_db and all dtypes (default: the CI subset)")
    p.add_argument("--ops", default="", help="comma-separated op names (name or name.variant)")
    p.add_argument("--dtypes", default="", help="comma-separated dtypes (default: float32,bfloat16; --full: all)")
    p.add_argument("--kinds", default=",".join(harness.KINDS), help="checks to run")
    p.add_argument("--max-samples", type=int, default=None, help="cap samples per (op, dtype, kind)")
    p.add_argument("--json", default="", help="write the counts and every failing sample here")
    p.add_argument("-v", "--verbose", action="store_true", help="print every failing sample")
    p.add_argument("--eager", choices=("host", "lowered"), default=os.environ.get("TORCHNEURON_EAGER") or "host",
                   help="eager executor under test (TORCHNEURON_EAGER; default: host)")
    p.add_argument("--in-process", action="store_true", help="no worker process (a crash ends the run)")
    p.add_argument("--worker", default="", help=argparse.SUPPRESS)  # internal: JSON-lines output path
    p.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _selection(args: argparse.Namespace):
    ops = selection.ops(full=args.full, names=[n for n in args.ops.split(",") if n])
    if args.dtypes:
        dtypes = [_dtype(d) for d in args.dtypes.split(",")]
    elif args.full:
        dtypes = list(selection.ALL_DTYPES)
    else:
        dtypes = list(selection.CI_DTYPES)
    return ops, dtypes, [k for k in args.kinds.split(",") if k]


def check_op(op, dtypes, kinds, max_samples) -> list[dict]:
    """One record per (dtype, kind) with sample counts and the failing samples."""
    key = harness.op_key(op)
    supported = op.supported_dtypes("cpu")
    records = []
    for dtype in dtypes:
        if dtype not in supported:
            continue
        for kind in kinds:
            skip = known_failures.skip_reason(key, kind, dtype)
            if skip is not None:
                outcomes = [harness.Outcome(key, dtype, kind, -1, "skip", skip)]
            else:
                outcomes = harness.run(op, dtype, kind, max_samples)
            c = collections.Counter(o.status for o in outcomes)
            records.append({
                "op": key, "dtype": str(dtype).replace("torch.", ""), "kind": kind,
                "pass": c["pass"], "fail": c["fail"], "skip": c["skip"],
                "xfail": known_failures.xfail_reason(key, kind, dtype),
                "failures": [[o.index, o.detail] for o in outcomes if o.status == "fail"],
                # compiled checks: passes whose call was not one fully lowered graph
                "eager": [[o.index, o.detail] for o in outcomes if o.status == "pass" and o.detail],
            })
    return records


def _units(ops, dtypes) -> list[tuple[int, torch.dtype]]:
    """The (op index, dtype) pairs to run, in order; a worker crash loses only the pair it was running."""
    return [(i, d) for i, op in enumerate(ops) for d in dtypes if d in op.supported_dtypes("cpu")]


def _worker(args: argparse.Namespace) -> int:
    harness.quiet_warnings()
    _use_eager(args.eager)
    ops, dtypes, kinds = _selection(args)
    units = _units(ops, dtypes)
    with open(args.worker, "a") as out:
        for u in range(args.start, len(units)):
            i, dtype = units[u]
            begin = {"begin": u, "op": harness.op_key(ops[i]), "dtype": str(dtype).replace("torch.", "")}
            out.write(json.dumps(begin) + "\n")
            out.flush()
            for record in check_op(ops[i], [dtype], kinds, args.max_samples):
                out.write(json.dumps(record) + "\n")
            out.write(json.dumps({"end": u}) + "\n")
            out.flush()
        out.write(json.dumps({"fallback_ops": _fallback_ops()}) + "\n")
    return 0


def _use_eager(mode: str) -> None:
    """Switches this process to ``mode``; torchneuron read TORCHNEURON_EAGER at import, before the flag."""
    os.environ["TORCHNEURON_EAGER"] = mode
    from torchneuron.programs import strict_eager

    strict_eager.install(mode == "lowered")


def _fallback_ops() -> list[str]:
    from torchneuron.programs import fallbacks

    return fallbacks.fallback_ops()


def _run_isolated(args: argparse.Namespace, argv: list[str], n_units: int, kinds,
                  fallback_ops: set[str]) -> list[dict]:
    fd, path = tempfile.mkstemp(prefix="tn-conformance-", suffix=".jsonl")
    os.close(fd)
    records: list[dict] = []
    start = 0
    env = {**os.environ, "TORCHNEURON_EAGER": args.eager}
    try:
        while start < n_units:
            cmd = [sys.executable, "-m", "tests.conformance.report", *argv, "--worker", path, "--start", str(start)]
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=_ROOT,
                                  env=env)
            begun, ended = None, set()
            with open(path) as f:
                lines = [json.loads(line) for line in f if line.strip()]
            open(path, "w").close()
            for line in lines:
                if "begin" in line:
                    begun = line
                elif "end" in line:
                    ended.add(line["end"])
                elif "fallback_ops" in line:
                    fallback_ops.update(line["fallback_ops"])
                else:
                    records.append(line)
            if proc.returncode == 0:
                break
            if begun is None or begun["begin"] in ended:
                raise SystemExit(f"conformance worker failed before running an op:\n{proc.stderr[-2000:]}")
            # The (op, dtype) that was running killed the worker: it fails every check it would have run.
            tail = " ".join(proc.stderr.strip().splitlines()[-3:])[-300:]
            dtype = _dtype(begun["dtype"])
            for kind in kinds:
                records.append({"op": begun["op"], "dtype": begun["dtype"], "kind": kind,
                                "pass": 0, "fail": 1, "skip": 0, "crashed": True,
                                "xfail": known_failures.crash_reason(begun["op"])
                                or known_failures.xfail_reason(begun["op"], kind, dtype),
                                "failures": [[-1, f"crashed the process (exit {proc.returncode}): {tail}"]]})
            print(f"  {begun['op']} [{begun['dtype']}] crashed the worker (exit {proc.returncode}); continuing",
                  file=sys.stderr)
            start = begun["begin"] + 1
    finally:
        os.unlink(path)
    return records


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parse(argv)
    if args.worker:
        return _worker(args)
    harness.quiet_warnings()
    ops, dtypes, kinds = _selection(args)
    started = time.time()
    fallback_ops: set[str] = set()
    if args.in_process:
        _use_eager(args.eager)
        records = [r for op in ops for r in check_op(op, dtypes, kinds, args.max_samples)]
        fallback_ops.update(_fallback_ops())
    else:
        passthrough = [a for a in argv if a not in ("-v", "--verbose")]
        passthrough = [a for i, a in enumerate(passthrough)
                       if a != "--json" and (i == 0 or passthrough[i - 1] != "--json")]
        records = _run_isolated(args, passthrough, len(_units(ops, dtypes)), kinds, fallback_ops)

    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    unexpected = []
    for r in records:
        c = counts[r["dtype"]]
        for status in ("pass", "fail", "skip"):
            c[status] += r[status]
        if r["fail"]:
            c["known" if r["xfail"] else "unexpected"] += r["fail"]
            if not r["xfail"]:
                unexpected.append(r)
            if args.verbose:
                for index, detail in r["failures"]:
                    print(f"FAIL {r['op']} [{r['kind']}, {r['dtype']}] #{index}: {detail}", file=sys.stderr)

    print(f"neuron OpInfo conformance ({args.eager} eager): {len(ops)} ops, checks {','.join(kinds)}, "
          f"{time.time() - started:.0f}s")
    if args.eager == "lowered":
        print(f"ATen ops without a lowering that ran on the host instead: {len(fallback_ops)}")
    print(f"{'dtype':<14}{'pass':>8}{'fail':>7}{'known':>7}{'skip':>8}{'pass %':>9}")
    for dtype in dtypes:
        name = str(dtype).replace("torch.", "")
        c = counts.get(name)
        if not c:
            continue
        ran = c["pass"] + c["fail"]
        pct = 100.0 * c["pass"] / ran if ran else 100.0
        print(f"{name:<14}{c['pass']:>8}{c['fail']:>7}{c['known']:>7}{c['skip']:>8}{pct:>8.2f}%")
    eager = [r for r in records if r.get("eager")]
    if eager:
        ops_eager = sorted({r["op"] for r in eager})
        print(f"\nright, but not fully lowered ({len(ops_eager)} ops): what ran eagerly")
        for r in eager:
            print(f"  {r['op']} [{r['kind']}, {r['dtype']}]: {r['eager'][0][1][:160]}")
    if unexpected:
        print("\nunexpected failures (not in tests/conformance/known_failures.py), by (op, check, dtype):")
        for r in unexpected:
            first = r["failures"][0][1][:160] if r["failures"] else ""
            print(f"  {r['op']} [{r['kind']}, {r['dtype']}] {r['fail']} samples: {first}")
    # Table entries that no longer describe reality: an expected failure whose samples all passed, a
    # "crashing" op that ran to the end.
    failing_keys = {(r["op"], r["kind"], r["dtype"]) for r in records if r["fail"]}
    stale = sorted({f"XFAIL {r['op']} [{r['kind']}, {r['dtype']}]" for r in records
                    if r["xfail"] and not known_failures.crash_reason(r["op"])
                    and not known_failures.may_pass(r["op"], r["kind"], _dtype(r["dtype"]))
                    and (r["op"], r["kind"], r["dtype"]) not in failing_keys and r["pass"]})
    if not args.in_process:
        stale += sorted({f"CRASH {r['op']}" for r in records
                         if known_failures.crash_reason(r["op"]) and not r.get("crashed")})
    if stale:
        print("\nstale entries in known_failures.py (they pass now; remove them):")
        for line in stale:
            print(f"  {line}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"eager": args.eager, "counts": {d: dict(c) for d, c in counts.items()}, "records": records,
                       "fallback_ops": sorted(fallback_ops)}, f, indent=1)
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
