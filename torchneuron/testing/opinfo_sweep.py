"""The OpInfo sweep's checker: runs an op's CPU samples with every ATen op they execute replayed through the
strict-eager path (single-op lowering → StableHLO → XLA:CPU) and compared with CPU eager.

``tools/gen_op_coverage.py`` runs it over all of ``op_db`` (in worker processes) to generate
``torchneuron/lowering/op_table.py``; tests run it on a few ops. An event is ``(ATen op, status, cause)`` with
status ``lowered`` | ``mismatch`` | ``missing`` | ``random`` (draws from the device generator) | ``runtime``
(views, allocation, copies: runtime operations, never compiled).
"""

from __future__ import annotations

import signal

import torch
from torch.utils._python_dispatch import TorchDispatchMode
import torch.utils._pytree as pytree

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
        return {torch.float32, torch.bfloat16}

    def sample_inputs(self, device, dtype, requires_grad=False):
        from torch.testing._internal.opinfo.core import SampleInput

        g = torch.Generator().manual_seed(0)
        ts = [torch.randn(s, generator=g).to(dtype).requires_grad_(requires_grad) for s in self.shapes]
        yield SampleInput(ts[0], args=tuple(ts[1:]))

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def probes() -> dict[str, _Probe]:
    def flash(q, k, v):
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, True)[0]

    def arange_out(x):
        return torch.arange(0, x.shape[0], out=torch.empty(x.shape[0], dtype=x.dtype))

    probes = [_Probe("sdpa_flash_cpu", flash, [(2, 4, 16, 8)] * 3, grad=True),
              _Probe("arange_out", arange_out, [(7,)], grad=False)]
    return {p.name: p for p in probes}


def check_opinfo(name: str, dtype: str = "float32", max_samples: int = 3, timeout: int = 120) -> dict:
    """{"status", "events"} for one OpInfo op and dtype (what the sweep records; used by a CI test)."""
    from torch.testing._internal.common_methods_invocations import op_db

    (op,) = [o for o in op_db if op_key(o) == name]
    return OpChecker(timeout).check(op, dtype, max_samples)


class _Timeout(Exception):
    """A sample ran longer than the checker's timeout (raised from SIGALRM)."""


def _on_alarm(*_):
    raise _Timeout()


def _compare(actual, expected, dtype_name: str) -> str | None:
    """Why ``actual`` is not CPU eager's ``expected`` within the dtype's tolerance, or None if it is."""
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


def _clone(tree):
    return pytree.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, tree)


def _written_args(func, args, kwargs) -> list:
    """The arguments an op writes (``Tensor(a!)``). Only these are compared after a mutating call: a read
    argument that aliased a written one in the recorded call (``mul(x, y, out=x)``) changed there, but
    replayed from separate clones it does not."""
    names = [a.name for a in func._schema.arguments]
    values = dict(zip(names, args), **kwargs)
    return [values.get(a.name) for a in func._schema.arguments
            if a.alias_info is not None and a.alias_info.is_write]


class _Record(TorchDispatchMode):
    """Records every ATen call of a sample with its inputs and CPU results; ``replay`` then runs each call
    through the strict-eager path (outside any dispatch mode) and compares."""

    def __init__(self, dtype_name: str):
        super().__init__()
        self.dtype_name = dtype_name
        self.calls: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.name() in RUNTIME_OPS:
            self.calls.append((func, None, None, None, None))
            return func(*args, **kwargs)
        before = _clone((args, kwargs))
        out = func(*args, **kwargs)
        written = _written_args(func, args, kwargs)
        self.calls.append((func, before, _clone(out), _clone(written) if written else None, bool(written)))
        return out

    def replay(self) -> list:
        # imported here, not with the module: the sweep's parent process lists and renders without lowering
        from torchneuron.lowering.errors import Unsupported, UnsupportedKind
        from torchneuron.programs.single_op import program_cache

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
                    if prog.kind.is_runtime_operation:
                        status = "runtime"
                    elif prog.kind is UnsupportedKind.RANDOM:
                        status = "random"
                    else:
                        status = "missing"
                    events.append((name, status, clip(prog.why, 300)))
                    continue
                actual = prog(info, values, dyn)
            except _Timeout:
                raise
            except Exception as e:
                msg = str(e).splitlines()[0] if str(e) else ""
                events.append((name, "missing", clip(f"{type(e).__name__}: {msg}", 300)))
                continue
            cause = _compare(actual, expected, self.dtype_name)
            if cause is None and mutable:
                cause = _compare(_written_args(func, args, kwargs), after, self.dtype_name)
            events.append((name, "mismatch" if cause else "lowered", cause or ""))
        return events


def _first_accepted(samples, max_samples: int, prepare):
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


class OpChecker:
    """``OpChecker(timeout).check(op, dtype_name, max_samples) -> {"status", "events", "grad_events"}`` for
    OpInfo ops and probes. Each sample (forward, then backward) gets ``timeout`` seconds, enforced by SIGALRM,
    whose handler the constructor installs: build it in the main thread."""

    def __init__(self, timeout: int):
        self.timeout = timeout
        signal.signal(signal.SIGALRM, _on_alarm)

    def check(self, op, dt_name: str, max_samples: int) -> dict:
        dt = getattr(torch, dt_name)
        if dt not in op.supported_dtypes("cpu"):
            return {"status": "n/a", "events": []}
        events: list = []
        status = "n/a"

        def eager_accepts(s):
            with torch.no_grad():
                op(s.input, *s.args, **s.kwargs)
            return True

        signal.alarm(self.timeout)
        try:
            n = 0
            for s, _ in _first_accepted(op.sample_inputs("cpu", dt, requires_grad=False), max_samples,
                                        eager_accepts):
                n += 1
                rec = _Record(dt_name)
                with torch.no_grad(), rec:
                    op(s.input, *s.args, **s.kwargs)
                events.extend(rec.replay())
            if n:
                status = "lowered"
        except _Timeout:
            events.append(("(timeout)", "missing", f"no result within {self.timeout}s"))
            status = "lowered"
        except Exception as e:
            events.append(("(sample)", "missing", clip(f"{type(e).__name__}: {e}", 200)))
            status = "lowered"
        finally:
            signal.alarm(0)
        grad_events = self.backward_events(op, dt, dt_name, max_samples) if status != "n/a" else []
        if status != "n/a":
            if any(ev[1] in ("missing", "random") for ev in events):
                status = "missing"  # see op_status: an op whose only unlowered ATen ops are random is "random"
            elif any(ev[1] == "mismatch" for ev in events):
                status = "mismatched"
        return {"status": status, "events": sorted(set(map(tuple, events))),
                "grad_events": sorted(set(map(tuple, grad_events)))}

    def backward_events(self, op, dt, dt_name: str, max_samples: int) -> list:
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
        signal.alarm(self.timeout)
        try:
            samples = op.sample_inputs("cpu", dt, requires_grad=True)
            for _, (outs, ins) in _first_accepted(samples, max_samples, differentiable):
                gen = torch.Generator().manual_seed(0)
                cot = [torch.randn(o.shape, generator=gen).to(o.dtype) for o in outs]
                rec = _Record(dt_name)
                try:
                    with rec:
                        torch.autograd.grad(outs, ins, cot, allow_unused=True)
                except Exception:
                    continue  # the CPU itself has no backward for this sample
                events.extend(rec.replay())
        except _Timeout:
            pass
        except Exception as e:
            events.append(("(backward)", "missing", clip(f"{type(e).__name__}: {e}", 200)))
        finally:
            signal.alarm(0)
        return events


def op_key(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def all_names() -> list[str]:
    from torch.testing._internal.common_methods_invocations import op_db

    return sorted({op_key(o) for o in op_db}) + sorted(probes())


def op_status(v: dict) -> str:
    """An OpInfo op whose only unlowered ATen ops are random ones is ``random`` (its values come from the
    device generator, so they cannot be compared with CPU), not ``missing``."""
    if v["status"] != "missing":
        return v["status"]
    if any(e[1] == "missing" for e in v["events"]):
        return "missing"
    return "mismatched" if any(e[1] == "mismatch" for e in v["events"]) else "random"


def op_cause(v: dict) -> str:
    for want in ("missing", "mismatch", "random"):
        for name, status, cause in v["events"]:
            if status == want:
                return f"{name}: {cause}"
    return ""
