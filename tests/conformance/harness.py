"""Runs PyTorch OpInfo samples on neuron and on the CPU and compares them, one sample at a time.

Shared by the pytest suite (tests/conformance/test_opinfo.py) and the counting script (report.py), so both
judge a sample the same way. Five kinds of check, as in PyTorch's own test_ops.py:

  sample     op(neuron copy of the sample) == op(CPU sample); tensor results live on neuron
  noncontig  the same with every tensor argument made non-contiguous on neuron (SampleInput.noncontiguous)
  out        the out= form writes the CPU answer into neuron tensors (shape-correct and size-0 outs, which
             the op must resize) and returns those very tensors
  inplace    the in-place form mutates the neuron input to the CPU answer and returns it; where the CPU
             refuses (broadcast into the input, a dtype it cannot cast to), neuron raises the same error type
  grad       torch.autograd.grad of the outputs, with the same random cotangents, matches the CPU's

Random ops compare exactly too: torch.manual_seed seeds the CPU and neuron generators alike, and the neuron
generator is the same Mersenne-Twister the CPU kernels draw from.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Iterator

import torch
import torchneuron  # noqa: F401  (registers the neuron device before OpInfo reads the device list)
from torch.testing._internal.opinfo.core import OpInfo, SampleInput
from torch.utils._pytree import tree_flatten, tree_map

from tests.conformance import known_failures

try:
    from torchneuron.lowering.coverage import FallbackWarning
except ImportError:  # the lowering package is optional for eager mode
    FallbackWarning = None

DEVICE = "neuron"
KINDS = ("sample", "noncontig", "out", "inplace", "grad")
SEED = 1234


def quiet_warnings() -> None:
    """Conformance runs thousands of ops: the lowering coverage policy and float64 notices stay silent."""
    if FallbackWarning is not None:
        warnings.filterwarnings("ignore", category=FallbackWarning)
    warnings.filterwarnings("ignore", message=".*computes on float64 tensors.*")
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)


@dataclasses.dataclass
class Outcome:
    op: str
    dtype: torch.dtype
    kind: str
    index: int
    status: str  # "pass" | "fail" | "skip"
    detail: str = ""


def op_key(op: OpInfo) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def tolerances(dtype: torch.dtype, op: str = "") -> dict[str, float]:
    # Host kernels run on the neuron buffers, so float32/bf16/fp16 agree with the CPU to the last bit in
    # practice; the tolerances are assert_close's defaults. float64 is computed in float32 (Trainium's rule),
    # so it is held to float32-level tolerances.
    override = known_failures.tolerance(op, dtype) if op else None
    if override is not None:
        return {"rtol": override[0], "atol": override[1]}
    if dtype in (torch.float64, torch.complex128):
        return {"rtol": 2e-5, "atol": 2e-5}
    return {}


# ---------------------------------------------------------------------------------------------- moving data


def to_neuron_tensor(t: torch.Tensor) -> torch.Tensor:
    """An exact neuron copy of a CPU tensor: same values, sizes, strides, offset and aliasing (expanded and
    overlapping layouts included), with requires_grad carried over as a fresh leaf."""
    src = t.detach()
    if src.is_conj():
        src = src.resolve_conj()
    if src.is_neg():
        src = src.resolve_neg()
    if src.layout != torch.strided:
        out = src.to(DEVICE)
    else:
        storage = src.untyped_storage()
        numel = storage.nbytes() // src.element_size()
        flat = torch.empty(0, dtype=src.dtype).set_(storage, 0, (numel,), (1,))
        out = flat.to(DEVICE).as_strided(src.size(), src.stride(), src.storage_offset())
    if t.requires_grad:
        out = out.detach().requires_grad_(True)
    return out


def _map(obj: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, list):
        return [_map(o, fn) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_map(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return obj


def sample_to_neuron(sample: SampleInput) -> SampleInput:
    return SampleInput(
        _map(sample.input, to_neuron_tensor),
        args=_map(sample.args, to_neuron_tensor),
        kwargs=_map(sample.kwargs, to_neuron_tensor),
        output_process_fn_grad=sample.output_process_fn_grad,
        broadcasts_input=sample.broadcasts_input,
        name=sample.name,
    )


def to_cpu(obj: Any) -> Any:
    return tree_map(lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x, obj)


def misplaced_results(result: Any) -> list[str]:
    """Tensor results that are not on neuron (an op on neuron inputs must leave its results there)."""
    leaves, _ = tree_flatten(result)
    return [str(t.device) for t in leaves if isinstance(t, torch.Tensor) and t.device.type != DEVICE]


_current_op = ""


def compare(actual: Any, expected: Any, dtype: torch.dtype) -> None:
    torch.testing.assert_close(
        to_cpu(actual), expected, equal_nan=True, check_device=False, check_layout=False,
        **tolerances(dtype, _current_op),
    )


def call(op: Callable, sample: SampleInput, **extra: Any) -> Any:
    torch.manual_seed(SEED)
    return op(sample.input, *sample.args, **sample.kwargs, **extra)


def reference(op: Callable, sample: SampleInput, **extra: Any) -> Any:
    """The CPU's answer; a sample the CPU itself rejects is skipped, not failed."""
    try:
        return call(op, sample, **extra)
    except Exception as e:
        raise _CpuRejects(f"CPU rejects the sample: {_short(e)}") from e


# -------------------------------------------------------------------------------------------------- checks


class _CpuRejects(Exception):
    pass


class SkipSample(Exception):
    """The sample cannot exercise this kind of check (e.g. the CPU itself rejects it)."""


def check_sample(op: OpInfo, cpu: SampleInput, dtype: torch.dtype) -> None:
    expected = reference(op, cpu)
    actual = call(op, sample_to_neuron(cpu))
    misplaced = misplaced_results(actual)
    assert not misplaced, f"results on {misplaced}, expected neuron"
    compare(op_process(cpu, actual), op_process(cpu, expected), dtype)


def check_noncontig(op: OpInfo, cpu: SampleInput, dtype: torch.dtype) -> None:
    expected = reference(op, cpu)
    neuron = sample_to_neuron(cpu).noncontiguous()
    actual = call(op, neuron)
    assert not misplaced_results(actual), "results left neuron"
    compare(op_process(cpu, actual), op_process(cpu, expected), dtype)


def op_process(sample: SampleInput, result: Any) -> Any:
    # output_process_fn_grad makes results comparable where an op's answer is not unique (signs of singular
    # vectors, ...), exactly as test_ops.test_compare_cpu uses it.
    return sample.output_process_fn_grad(result)


def _out_like(expected: Any, resize: bool) -> Any:
    def make(t: torch.Tensor) -> torch.Tensor:
        return torch.empty(0 if resize else t.shape, dtype=t.dtype, device=DEVICE)

    if isinstance(expected, torch.Tensor):
        return make(expected)
    if isinstance(expected, (tuple, list)) and expected and all(isinstance(t, torch.Tensor) for t in expected):
        return tuple(make(t) for t in expected)
    raise SkipSample("out= needs tensor results")


def check_out(op: OpInfo, cpu: SampleInput, dtype: torch.dtype, index: int) -> None:
    expected = reference(op, cpu)
    out = _out_like(expected, resize=index % 2 == 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # resizing a non-empty out= warns, as on the CPU
        returned = call(op, sample_to_neuron(cpu), out=out)
    compare(out, expected, dtype)
    outs = out if isinstance(out, tuple) else (out,)
    rets = returned if isinstance(returned, (tuple, list)) else (returned,)
    for o, r in zip(outs, rets):
        assert r.data_ptr() == o.data_ptr() and r.device.type == DEVICE, "out= did not return the out tensor"


def check_inplace(op: OpInfo, cpu: SampleInput, dtype: torch.dtype) -> None:
    inplace = op.get_inplace()
    if inplace is None:
        raise SkipSample("no in-place variant")
    if not isinstance(cpu.input, torch.Tensor):
        raise SkipSample("in-place needs a tensor input")
    cpu_copy = SampleInput(cpu.input.clone(), args=cpu.args, kwargs=cpu.kwargs)
    try:
        expected = call(inplace, cpu_copy)
    except Exception as cpu_error:  # the CPU refuses: neuron must refuse the same way
        neuron = sample_to_neuron(cpu)
        try:
            call(inplace, neuron)
        except Exception as neuron_error:
            assert type(neuron_error) is type(cpu_error), (
                f"CPU raised {type(cpu_error).__name__}, neuron {type(neuron_error).__name__}: {neuron_error}"
            )
            return
        raise AssertionError(f"CPU raised {type(cpu_error).__name__} ({cpu_error}); neuron did not")
    neuron = sample_to_neuron(cpu)
    target = neuron.input
    ptr = target.data_ptr()
    actual = call(inplace, neuron)
    assert actual is target or actual.data_ptr() == ptr, "in-place variant did not return its input"
    compare(target, cpu_copy.input, dtype)
    compare(actual, expected, dtype)


def _grad_inputs(sample: SampleInput) -> list[torch.Tensor]:
    leaves, _ = tree_flatten((sample.input, sample.args, sample.kwargs))
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]


def _differentiable(result: Any) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(result)
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad and t.grad_fn is not None]


def check_grad(op: OpInfo, cpu: SampleInput, dtype: torch.dtype) -> None:
    cpu_inputs = _grad_inputs(cpu)
    if not cpu_inputs:
        raise SkipSample("no input requires grad")
    neuron = sample_to_neuron(cpu)
    neuron_inputs = _grad_inputs(neuron)
    cpu_out = _differentiable(op_process(cpu, reference(op, cpu)))
    if not cpu_out:
        raise SkipSample("no differentiable output")
    neuron_out = _differentiable(op_process(neuron, call(op, neuron)))
    assert len(neuron_out) == len(cpu_out), "different number of differentiable outputs"
    gen = torch.Generator().manual_seed(SEED)
    cotangents = [torch.randn(o.shape, generator=gen, dtype=torch.float32).to(o.dtype) for o in cpu_out]
    expected = torch.autograd.grad(cpu_out, cpu_inputs, cotangents, allow_unused=True)
    actual = torch.autograd.grad(neuron_out, neuron_inputs, [c.to(DEVICE) for c in cotangents], allow_unused=True)
    for a, e in zip(actual, expected):
        if e is None:
            assert a is None, "neuron produced a gradient the CPU did not"
            continue
        assert a is not None and a.device.type == DEVICE, "gradient missing or not on neuron"
        compare(a, e, dtype)


# -------------------------------------------------------------------------------------------------- driving


def applicable(op: OpInfo, kind: str, dtype: torch.dtype) -> str | None:
    """None when the kind applies to this op and dtype, else why not (counted as skip)."""
    if kind == "out" and not op.supports_out:
        return "op has no out= variant"
    if kind == "inplace" and op.get_inplace() is None:
        return "op has no in-place variant"
    if kind == "grad":
        if not op.supports_autograd:
            return "op does not support autograd"
        if dtype not in op.supported_backward_dtypes("cpu") or not (dtype.is_floating_point or dtype.is_complex):
            return "dtype has no backward on the CPU"
    return None


def samples(op: OpInfo, dtype: torch.dtype, kind: str) -> Iterator[SampleInput]:
    torch.manual_seed(SEED)
    return iter(op.sample_inputs("cpu", dtype, requires_grad=kind == "grad"))


def run(op: OpInfo, dtype: torch.dtype, kind: str, max_samples: int | None = None) -> list[Outcome]:
    """Every sample of (op, dtype) checked one way; never raises for a failing sample."""
    key = op_key(op)
    why_not = applicable(op, kind, dtype)
    if why_not is not None:
        return [Outcome(key, dtype, kind, -1, "skip", why_not)]
    outcomes: list[Outcome] = []
    try:
        it = samples(op, dtype, kind)
        for index, cpu in enumerate(it):
            if max_samples is not None and index >= max_samples:
                break
            outcomes.append(_one(op, cpu, dtype, kind, index, key))
    except Exception as e:  # the sample generator itself failed on the CPU: not neuron's to judge
        outcomes.append(Outcome(key, dtype, kind, len(outcomes), "skip", f"sample generation: {_short(e)}"))
    return outcomes


def _one(op: OpInfo, cpu: SampleInput, dtype: torch.dtype, kind: str, index: int, key: str) -> Outcome:
    global _current_op
    _current_op = key
    try:
        if kind == "sample":
            check_sample(op, cpu, dtype)
        elif kind == "noncontig":
            check_noncontig(op, cpu, dtype)
        elif kind == "out":
            check_out(op, cpu, dtype, index)
        elif kind == "inplace":
            check_inplace(op, cpu, dtype)
        elif kind == "grad":
            check_grad(op, cpu, dtype)
        else:
            raise ValueError(f"unknown check kind {kind!r}; expected one of {KINDS}")
    except SkipSample as s:
        return Outcome(key, dtype, kind, index, "skip", str(s))
    except _CpuRejects as s:
        return Outcome(key, dtype, kind, index, "skip", str(s))
    except Exception as e:
        return Outcome(key, dtype, kind, index, "fail", f"{type(e).__name__}: {_short(e)}")
    return Outcome(key, dtype, kind, index, "pass")


def _short(e: BaseException, limit: int = 300) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
