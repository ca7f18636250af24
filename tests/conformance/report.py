"""Counts OpInfo conformance on neuron: pass/fail/skip per dtype, per sample.

    python -m tests.conformance.report                 # CI subset, float32 + bfloat16
    python -m tests.conformance.report --full          # every op in op_db, every dtype the op has
    python -m tests.conformance.report --full --dtypes float32,bfloat16 --json out.json
    python -m tests.conformance.report --ops add,mm --kinds sample,grad -v

A sample counts once per kind of check (sample, noncontig, out, inplace, grad). "pass %" is
pass / (pass + fail): skips are samples a check does not apply to (no out= form, the CPU itself rejects
the sample, an entry in known_failures.SKIP). Failures listed in known_failures.XFAIL are counted as
failures (they are real) and reported apart from unexpected ones; the exit status is 1 when any failure is
unexpected.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time

import torch

from tests.conformance import harness, known_failures, selection


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name.strip(), None)
    if not isinstance(dtype, torch.dtype):
        raise SystemExit(f"unknown dtype {name!r} (use torch names: float32, bfloat16, int64, ...)")
    return dtype


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--full", action="store_true", help="all of op_db and all dtypes (default: the CI subset)")
    p.add_argument("--ops", default="", help="comma-separated op names (name or name.variant)")
    p.add_argument("--dtypes", default="", help="comma-separated dtypes (default: float32,bfloat16; --full: all)")
    p.add_argument("--kinds", default=",".join(harness.KINDS), help="checks to run")
    p.add_argument("--max-samples", type=int, default=None, help="cap samples per (op, dtype, kind)")
    p.add_argument("--json", default="", help="write every outcome here")
    p.add_argument("-v", "--verbose", action="store_true", help="print every failing sample")
    args = p.parse_args(argv)

    harness.quiet_warnings()
    ops = selection.ops(full=args.full or bool(args.ops), names=[n for n in args.ops.split(",") if n])
    if args.dtypes:
        dtypes = [_dtype(d) for d in args.dtypes.split(",")]
    elif args.full:
        dtypes = list(selection.ALL_DTYPES)
    else:
        dtypes = list(selection.CI_DTYPES)
    kinds = [k for k in args.kinds.split(",") if k]

    counts: dict[torch.dtype, collections.Counter] = collections.defaultdict(collections.Counter)
    unexpected: list[harness.Outcome] = []
    outcomes_json = []
    start = time.time()
    for op in ops:
        supported = op.supported_dtypes("cpu")
        for dtype in dtypes:
            if dtype not in supported:
                continue
            for kind in kinds:
                skip = known_failures.skip_reason(harness.op_key(op), kind, dtype)
                if skip is not None:
                    outcomes = [harness.Outcome(harness.op_key(op), dtype, kind, -1, "skip", skip)]
                else:
                    outcomes = harness.run(op, dtype, kind, args.max_samples)
                xfail = known_failures.xfail_reason(harness.op_key(op), kind, dtype)
                for o in outcomes:
                    counts[dtype][o.status] += 1
                    if o.status == "fail":
                        counts[dtype]["known" if xfail else "unexpected"] += 1
                        if not xfail:
                            unexpected.append(o)
                        if args.verbose:
                            print(f"FAIL {o.op} {kind} {dtype} #{o.index}: {o.detail}", file=sys.stderr)
                    if args.json:
                        outcomes_json.append(
                            {"op": o.op, "dtype": str(dtype), "kind": kind, "index": o.index, "status": o.status,
                             "detail": o.detail, "xfail": xfail}
                        )

    print(f"neuron OpInfo conformance: {len(ops)} ops, kinds {','.join(kinds)}, {time.time() - start:.0f}s")
    print(f"{'dtype':<16}{'pass':>8}{'fail':>8}{'(known)':>9}{'skip':>8}{'pass %':>9}")
    for dtype in dtypes:
        c = counts.get(dtype)
        if not c:
            continue
        ran = c["pass"] + c["fail"]
        pct = 100.0 * c["pass"] / ran if ran else 100.0
        print(f"{str(dtype).replace('torch.', ''):<16}{c['pass']:>8}{c['fail']:>8}{c['known']:>9}{c['skip']:>8}{pct:>8.2f}%")
    if unexpected:
        print(f"\n{len(unexpected)} unexpected failures (not in tests/conformance/known_failures.py):")
        seen = set()
        for o in unexpected:
            key = (o.op, o.kind, o.dtype)
            if key in seen:
                continue
            seen.add(key)
            print(f"  {o.op} [{o.kind}, {str(o.dtype).replace('torch.', '')}] #{o.index}: {o.detail[:200]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"counts": {str(d): dict(c) for d, c in counts.items()}, "outcomes": outcomes_json}, f, indent=1)
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
