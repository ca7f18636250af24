#!/usr/bin/env python
"""Generate the op coverage table (torchneuron/lowering/op_table.py) and docs/op_coverage.md.

Every OpInfo op (torch.testing._internal.common_methods_invocations.op_db) is run, per dtype (float32 and
bfloat16), on its first few CPU samples under a dispatch mode that sends *every ATen op the sample executes*
through the strict-eager path (single-op lowering → StableHLO → XLA:CPU) and compares each result with CPU
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
TABLE = ROOT / "torchneuron" / "lowering" / "op_table.py"
DOC = ROOT / "docs" / "op_coverage.md"
DTYPES = ("float32", "bfloat16")

# Ops the device layer implements as runtime calls (allocation, copies, scalar reads, metadata), never compiled.
RUNTIME_OPS = [
    "aten::empty.memory_format", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
    "aten::new_empty_strided", "aten::resize_", "aten::resize_as_", "aten::set_.source_Storage",
    "aten::set_.source_Storage_storage_offset", "aten::set_.source_Tensor", "aten::set_",
    "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize", "aten::_to_copy", "aten::clone",
    "aten::contiguous", "aten::_local_scalar_dense", "aten::record_stream", "aten::detach", "aten::lift_fresh",
    "aten::lift_fresh_copy", "aten::zeros", "aten::zeros_like", "aten::ones", "aten::ones_like", "aten::full",
    "aten::full_like", "aten::empty_permuted", "aten::scalar_tensor", "aten::new_zeros", "aten::new_ones",
    "aten::new_full", "aten::fill_.Scalar", "aten::zero_", "aten::_has_compatible_shallow_copy_type",
]
TOL = {"float32": (1.3e-6 * 100, 1e-5 * 10), "bfloat16": (1.6e-2 * 2, 1e-2 * 2)}


# ATen ops a model runs that no OpInfo sample reaches under a dispatch mode (the CPU's fused attention is
# not chosen there; torch.arange on a device lands in arange.start_out). Each probe is run and checked like
# an OpInfo op, forward and backward; it counts per overload only, never as an OpInfo op.
PROBE_PREFIX = "probe:"


class _Probe:
    def __init__(self, name: str, fn, shapes: list[tuple[int, ...]], grad: bool):
        self.name, self.variant_test_name = PROBE_PREFIX + name, ""
        self.fn, self.shapes, self.supports_autograd = fn, shapes, grad

    def supported_dtypes(self, device):
        import torch

        return {torch.float32, torch.bfloat16}

    def sample_inputs(self, device, dtype, requires_grad=False):
        import torch
        from torch.testing._internal.opinfo.core import SampleInput

        g = torch.Generator().manual_seed(0)
        ts = [torch.randn(s, generator=g).to(dtype).requires_grad_(requires_grad) for s in self.shapes]
        yield SampleInput(ts[0], args=tuple(ts[1:]))

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def _probes() -> dict[str, _Probe]:
    import torch

    def flash(q, k, v):
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, True)[0]

    def arange_out(x):
        return torch.arange(0, x.shape[0], out=torch.empty(x.shape[0], dtype=x.dtype))

    probes = [_Probe("sdpa_flash_cpu", flash, [(2, 4, 16, 8)] * 3, grad=True),
              _Probe("arange_out", arange_out, [(7,)], grad=False)]
    return {p.name: p for p in probes}


# ------------------------------------------------------------------------------------------------ worker
def _worker(names: list[str], dtypes: list[str], max_samples: int, out: Path, timeout: int) -> None:
    from torch.testing._internal.common_methods_invocations import op_db

    from torchneuron.lowering import fx_to_stablehlo

    fx_to_stablehlo.ISOLATE = False  # this worker is disposable: a compiler crash is caught by the parent
    by_name = {_key(o): o for o in op_db}
    by_name.update(_probes())
    check = _make_checker(timeout)
    with open(out, "a") as f:
        for nm in names:
            op = by_name[nm]
            result = {"op": nm, "dtypes": {dt: check(op, dt, max_samples) for dt in dtypes}}
            f.write(json.dumps(result) + "\n")
            f.flush()


def check_opinfo(name: str, dtype: str = "float32", max_samples: int = 3, timeout: int = 120) -> dict:
    """{"status", "events"} for one OpInfo op and dtype (what the sweep records; used by a CI test)."""
    from torch.testing._internal.common_methods_invocations import op_db

    (op,) = [o for o in op_db if _key(o) == name]
    return _make_checker(timeout)(op, dtype, max_samples)


def _make_checker(timeout: int):
    import signal

    import torch
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.utils._python_dispatch import TorchDispatchMode
    import torch.utils._pytree as pytree

    from torchneuron.lowering.single_op import Unsupported, program_cache

    class Timeout(Exception):
        pass

    def on_alarm(*_):
        raise Timeout()

    signal.signal(signal.SIGALRM, on_alarm)

    def compare(actual, expected, dtype_name):
        rtol, atol = TOL[dtype_name]
        a_leaves = pytree.tree_leaves(actual)
        e_leaves = pytree.tree_leaves(expected)
        if len(a_leaves) != len(e_leaves):
            return f"{len(a_leaves)} results, expected {len(e_leaves)}"
        for a, e in zip(a_leaves, e_leaves):
            if isinstance(e, torch.Tensor):
                if not isinstance(a, torch.Tensor):
                    return f"result is {type(a).__name__}, expected a tensor"
                if a.dtype != e.dtype:
                    return f"dtype {a.dtype} vs {e.dtype}"
                if a.shape != e.shape:
                    return f"shape {list(a.shape)} vs {list(e.shape)}"
                try:
                    torch.testing.assert_close(a, e, rtol=rtol, atol=atol, equal_nan=True, check_device=False)
                except AssertionError as err:
                    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
                    return clip("; ".join(lines[:3]), 200)
            elif isinstance(e, (bool, int, float)) and not isinstance(a, torch.Tensor):
                if type(a) is not type(e) or (a != e and not (a != a and e != e)):  # NaN equals NaN here
                    return f"value {a!r} vs {e!r}"
        return None

    def clone(tree):
        return pytree.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, tree)

    def written_args(func, args, kwargs) -> list:
        """The arguments an op writes (``Tensor(a!)``). Only these are compared after a mutating call: a read
        argument that aliased a written one in the recorded call (``mul(x, y, out=x)``) changed there, but
        replayed from separate clones it does not."""
        names = [a.name for a in func._schema.arguments]
        values = dict(zip(names, args), **kwargs)
        return [values.get(a.name) for a in func._schema.arguments if a.alias_info is not None and a.alias_info.is_write]

    class Record(TorchDispatchMode):
        """Records every ATen call of a sample with its inputs and CPU results; ``replay`` then runs each call
        through the strict-eager path (outside any dispatch mode) and compares."""

        def __init__(self, dtype_name):
            super().__init__()
            self.dtype_name = dtype_name
            self.calls: list = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func.name() in RUNTIME_OPS:
                self.calls.append((func, None, None, None, None))
                return func(*args, **kwargs)
            before = clone((args, kwargs))
            out = func(*args, **kwargs)
            written = written_args(func, args, kwargs)
            self.calls.append((func, before, clone(out), clone(written) if written else None, bool(written)))
            return out

        def replay(self):
            events = []
            for func, before, expected, after, mutable in self.calls:
                name = func.name()
                if before is None:
                    events.append((name, "runtime", ""))
                    continue
                args, kwargs = before
                try:
                    prog, info, values, dyn = program_cache().lookup(func, args, kwargs)
                    if isinstance(prog, Unsupported):
                        why = str(prog).removeprefix(f"{info.name}: ")
                        status = "runtime" if why.startswith(("view", "runtime check", "no tensor inputs")) else "missing"
                        events.append((name, status, clip(why, 300)))
                        continue
                    actual = prog(info, values, dyn)
                except Timeout:
                    raise
                except Exception as e:
                    msg = str(e).splitlines()[0] if str(e) else ""
                    events.append((name, "missing", clip(f"{type(e).__name__}: {msg}", 300)))
                    continue
                cause = compare(actual, expected, self.dtype_name)
                if cause is None and mutable:
                    cause = compare(written_args(func, args, kwargs), after, self.dtype_name)
                events.append((name, "mismatch" if cause else "lowered", cause or ""))
            return events

    def first_accepted(samples, max_samples: int, prepare):
        """Up to ``max_samples`` (sample, prepare(sample)) pairs, skipping samples the CPU itself rejects
        (prepare raises) or that do not apply (prepare returns None)."""
        n = 0
        for s in samples:
            if n >= max_samples:
                return
            try:
                prepared = prepare(s)
            except Exception:
                continue
            if prepared is None:
                continue
            n += 1
            yield s, prepared

    def check(op, dt_name: str, max_samples: int) -> dict:
        dt = getattr(torch, dt_name)
        if dt not in op.supported_dtypes("cpu"):
            return {"status": "n/a", "events": []}
        events: list = []
        status = "n/a"

        def eager_accepts(s):
            with torch.no_grad():
                op(s.input, *s.args, **s.kwargs)
            return True

        signal.alarm(timeout)
        try:
            n = 0
            for s, _ in first_accepted(op.sample_inputs("cpu", dt, requires_grad=False), max_samples, eager_accepts):
                n += 1
                rec = Record(dt_name)
                with torch.no_grad(), rec:
                    op(s.input, *s.args, **s.kwargs)
                events.extend(rec.replay())
            if n:
                status = "lowered"
        except Timeout:
            events.append(("(timeout)", "missing", f"no result within {timeout}s"))
            status = "lowered"
        except Exception as e:
            events.append(("(sample)", "missing", clip(f"{type(e).__name__}: {e}", 200)))
            status = "lowered"
        finally:
            signal.alarm(0)
        grad_events = backward_events(op, dt, dt_name, max_samples) if status != "n/a" else []
        if status != "n/a":
            if any(ev[1] == "missing" for ev in events):
                status = "missing"
            elif any(ev[1] == "mismatch" for ev in events):
                status = "mismatched"
        return {"status": status, "events": sorted(set(map(tuple, events))),
                "grad_events": sorted(set(map(tuple, grad_events)))}

    def backward_events(op, dt, dt_name: str, max_samples: int) -> list:
        """The ATen ops of the op's backward (gelu_backward, the flash-attention backward, ...), recorded the
        same way. They feed the per-overload table (so a training step's backward is known to
        fallback_ops() and the policy), not the OpInfo op's own status, which stays a forward measure."""
        if not op.supports_autograd or not dt.is_floating_point:
            return []

        def differentiable(s):
            out = s.output_process_fn_grad(op(s.input, *s.args, **s.kwargs))
            outs = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.grad_fn is not None]
            ins = [t for t in pytree.tree_leaves((s.input, s.args, s.kwargs))
                   if isinstance(t, torch.Tensor) and t.requires_grad]
            return (outs, ins) if outs and ins else None

        events: list = []
        signal.alarm(timeout)
        try:
            samples = op.sample_inputs("cpu", dt, requires_grad=True)
            for _, (outs, ins) in first_accepted(samples, max_samples, differentiable):
                gen = torch.Generator().manual_seed(0)
                cot = [torch.randn(o.shape, generator=gen).to(o.dtype) for o in outs]
                rec = Record(dt_name)
                try:
                    with rec:
                        torch.autograd.grad(outs, ins, cot, allow_unused=True)
                except Exception:
                    continue  # the CPU itself has no backward for this sample
                events.extend(rec.replay())
        except Timeout:
            pass
        except Exception as e:
            events.append(("(backward)", "missing", clip(f"{type(e).__name__}: {e}", 200)))
        finally:
            signal.alarm(0)
        return events

    return check


def _key(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


# ------------------------------------------------------------------------------------------------ driver
def _all_names() -> list[str]:
    from torch.testing._internal.common_methods_invocations import op_db

    return sorted({_key(o) for o in op_db}) + sorted(_probes())


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
                if cause.startswith("random op"):
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
    opinfo = {r["op"]: {d: (_op_status(v), _op_cause(v)) for d, v in r["dtypes"].items()} for r in results
              if not r["op"].startswith(PROBE_PREFIX)}
    return {"OVERLOADS": overloads, "CAUSES": {k: v for k, v in sorted(causes.items()) if k in overloads},
            "RUNTIME": sorted(runtime - set(overloads)), "RANDOM": sorted(random - set(overloads)), "OPINFO": opinfo}


def _op_status(v: dict) -> str:
    """An OpInfo op whose only unlowered ATen ops are random ones is ``random`` (its values come from the
    device generator, so they cannot be compared with CPU), not ``missing``."""
    if v["status"] != "missing":
        return v["status"]
    real = [e for e in v["events"] if e[1] == "missing" and not e[2].startswith("random op")]
    if real:
        return "missing"
    return "mismatched" if any(e[1] == "mismatch" for e in v["events"]) else "random"


def _op_cause(v: dict) -> str:
    for want, random_ok in (("missing", False), ("mismatch", True), ("missing", True)):
        for name, status, cause in v["events"]:
            if status == want and (random_ok or not cause.startswith("random op")):
                return f"{name}: {cause}"
    return ""


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
    sys.path.insert(0, str(ROOT))
    import torchneuron.lowering.op_table as t

    return dict(t.GENERATED) or None


def summary(opinfo: dict, dtype: str) -> dict[str, int]:
    c = defaultdict(int)
    for v in opinfo.values():
        if dtype in v:
            c[v[dtype][0]] += 1
    return dict(c)


def write_doc() -> None:
    sys.path.insert(0, str(ROOT))
    import importlib

    import torchneuron.lowering.op_table as t

    importlib.reload(t)
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(render_doc(t))


def render_doc(t) -> str:
    """docs/op_coverage.md from the table module ``t`` (deterministic: a test checks the doc is current)."""
    out = ["# Op coverage: StableHLO lowering validated on XLA:CPU", "",
           "Generated by `python tools/gen_op_coverage.py` from `torchneuron/lowering/op_table.py` (the single source",
           "of truth, also read by `torchneuron.fallback_ops()`); do not edit by hand.", "",
           "Every OpInfo op is run on its first CPU samples; every ATen op a sample executes goes through the",
           "strict-eager path (single-op lowering → StableHLO → XLA:CPU) and is compared with CPU eager",
           "(float32: rtol 1.3e-4, atol 1e-4; bfloat16: rtol 3.2e-2, atol 2e-2).", "",
           f"Generated with: {', '.join(f'{k} {v}' for k, v in t.GENERATED.items())}", "", "## Summary", "",
           "| dtype | ops | lowered + matched | mismatched | missing | random | lowered + matched % |",
           "|---|---|---|---|---|---|---|"]
    for dt in DTYPES:
        s = summary(t.OPINFO, dt)
        n = sum(s.get(k, 0) for k in ("lowered", "mismatched", "missing", "random"))
        pct = 100.0 * s.get("lowered", 0) / n if n else 0.0
        out.append(f"| {dt} | {n} | {s.get('lowered', 0)} | {s.get('mismatched', 0)} | {s.get('missing', 0)} | "
                   f"{s.get('random', 0)} | {pct:.1f} % |")
    out += ["", "`ops` counts the OpInfo entries that support the dtype on CPU. `random`: the op's only unlowered",
            "ATen ops draw random numbers (values come from the device generator, no StableHLO RNG lowering yet);",
            "they are counted against the percentage. Ops listed in `RUNTIME` (allocation, copies, views, scalar",
            "reads) are runtime calls and never compiled.", "",
            "The ATen ops of each differentiable op's backward (its samples run again with `requires_grad`) and of",
            "a few probes for ops no OpInfo sample reaches (`_probes()`: the CPU's fused attention kernel and its",
            "backward, `arange.start_out`) are checked the same way. They count in the overload table below, which",
            "`fallback_ops()` and the op policy read, not in the OpInfo summary."]
    ov = defaultdict(int)
    for v in t.OVERLOADS.values():
        ov[v] += 1
    out += ["", f"ATen overloads seen: {len(t.OVERLOADS)} computing ({ov['lowered']} lowered, {ov['mismatch']} mismatch, "
            f"{ov['missing']} missing), {len(t.RANDOM)} random and {len(t.RUNTIME)} runtime operations "
            "(views, allocation, copies).", ""]
    groups: dict[str, list[str]] = defaultdict(list)
    for k, v in t.OPINFO.items():
        if v.get("float32", ("",))[0] == "missing":
            groups[_category(v["float32"][1])].append(k)
    out += ["## Why ops are missing (float32)", "", "| cause | ops | examples |", "|---|---|---|"]
    for cat, ops in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        out.append(f"| {cat} | {len(ops)} | {', '.join(f'`{o}`' for o in ops[:6])}{' …' if len(ops) > 6 else ''} |")
    out.append("")
    for title, want in (("Mismatched (float32)", "mismatched"), ("Missing (float32)", "missing")):
        rows = [(k, v["float32"][1]) for k, v in t.OPINFO.items() if v.get("float32", ("",))[0] == want]
        out += [f"## {title}: {len(rows)}", "", "| op | cause |", "|---|---|"]
        out += [f"| `{k}` | {_md(c)} |" for k, c in rows]
        out.append("")
    out += ["## All OpInfo ops", "", "| op | float32 | bfloat16 |", "|---|---|---|"]
    for k, v in t.OPINFO.items():
        out.append(f"| `{k}` | {v.get('float32', ('n/a',))[0]} | {v.get('bfloat16', ('n/a',))[0]} |")
    out += ["", "## ATen overloads not plainly lowered", "", "| overload | status | cause |", "|---|---|---|"]
    for k, v in t.OVERLOADS.items():
        if v != "lowered" or k in t.CAUSES:
            out.append(f"| `{k}` | {v} | {_md(t.CAUSES.get(k, ''))} |")
    out.append("")
    return "\n".join(out)


def _category(cause: str) -> str:
    """A coarse reason for a missing op, from its recorded cause."""
    op = cause.split(": ", 1)[0]
    c = cause.lower()
    if any(w in op for w in ("linalg", "cholesky", "_lu", "lu_", "svd", "eig", "qr", "triangular", "geqrf",
                             "ormqr", "lstsq", "solve", "inverse", "det")):
        return "linear algebra (no StableHLO lowering in torch-mlir)"
    if "fft" in op:
        return "FFT (no StableHLO lowering in torch-mlir)"
    if any(w in c for w in ("bessel", "gamma", "special_", "erfc", "erf_inv", "ndtri", "zeta", "polygamma",
                            "digamma", "airy", "polynomial", "i0")):
        return "special functions (no StableHLO lowering in torch-mlir)"
    if "static-shape" in c or "dynamic shapes" in c or "data-dependent" in c:
        return "data-dependent output shape (cannot be static-shape StableHLO)"
    if "non-tensor" in c:
        return "returns a Python value (bool/number)"
    if "cannot trace" in c or "mutates a tensor" in c or "importer" in c:
        return "tracing/functionalization limits"
    if "crash" in c or "worker died" in c:
        return "compiler crash (isolated)"
    if "xla:cpu rejected" in c:
        return "StableHLO rejected by XLA"
    return "other torch-mlir lowering gaps"


def clip(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, cut at a word boundary and marked with an ellipsis: causes are
    shown to users (FallbackWarning, docs/op_coverage.md), which must never read a word cut in half."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:([{") + "…"


def _md(s: str) -> str:
    return clip(s.replace("|", "\\|").replace("\n", " "), 240)


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
    names = a.ops.split(",") if a.ops else _all_names()
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
                print(r["op"], d, v["status"], _op_cause(v))
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
