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
  compiled   (on demand) the op called inside torch.compile(backend="neuron") matches the CPU; a pass whose
             graph ran pieces eagerly (ops without a lowering) or broke out of Dynamo says so in its detail

Samples are generated on neuron (as in PyTorch's device tests) and copied exactly to the CPU.
Random ops compare exactly too: torch.manual_seed seeds the CPU and neuron generators alike, and the neuron
generator is the same Mersenne-Twister the CPU kernels draw from.
"""

from __future__ import annotations

import dataclasses
import os
import types
import warnings
from typing import Any, Callable, Iterator

import torch
import torchneuron  # noqa: F401  (registers the neuron device before OpInfo reads the device list)
from torch.testing._internal.opinfo.core import OpInfo, SampleInput
from torch.utils._pytree import tree_flatten, tree_map

from tests.conformance import known_failures

try:
    from torchneuron.programs.fallbacks import FallbackWarning
except ImportError:  # the lowering package is optional for eager mode
    FallbackWarning = None

DEVICE = "neuron"
KINDS = ("sample", "noncontig", "out", "inplace", "grad")
# not in the default sweep (a compile per sample): `report.py --kinds compiled`
COMPILED = "compiled"
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


def exact_copy(t: torch.Tensor, device: str) -> torch.Tensor:
    """A copy of `t` on `device` with the same values, sizes, strides, offset and aliasing (expanded and
    overlapping layouts included: the whole storage is copied), and requires_grad carried over as a leaf."""
    src = t.detach()
    if src.is_conj():
        src = src.resolve_conj()
    if src.is_neg():
        src = src.resolve_neg()
    if src.layout != torch.strided:
        out = src.to(device)
    else:
        storage = src.untyped_storage()
        numel = storage.nbytes() // src.element_size()
        flat = torch.empty(0, dtype=src.dtype, device=src.device).set_(storage, 0, (numel,), (1,))
        out = flat.to(device, copy=True).as_strided(src.size(), src.stride(), src.storage_offset())
    if t.requires_grad:
        out = out.detach().requires_grad_(True)
    return out


def to_neuron_tensor(t: torch.Tensor) -> torch.Tensor:
    return exact_copy(t, DEVICE)


def _map(obj: Any, fn: Callable[[torch.Tensor], Any], key: str = "") -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, torch.device):
        return torch.device("cpu") if obj.type == DEVICE else obj
    if isinstance(obj, str) and (obj == DEVICE or obj.startswith(DEVICE + ":")):
        return "cpu"
    if isinstance(obj, list):
        return [_map(o, fn) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_map(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map(v, fn, k) for k, v in obj.items()}
    return obj


def sample_to_cpu(sample: SampleInput) -> SampleInput:
    """The CPU twin of a sample generated on neuron: neuron tensors copied exactly, device arguments
    pointed at the CPU; tensors the sample keeps on the host (split indices, ...) stay as they are."""
    def move(t: torch.Tensor) -> torch.Tensor:
        return exact_copy(t, "cpu")

    return SampleInput(
        _map(sample.input, move),
        args=_map(sample.args, move),
        kwargs=_map(sample.kwargs, move),
        output_process_fn_grad=sample.output_process_fn_grad,
        broadcasts_input=sample.broadcasts_input,
        name=sample.name,
    )


def fresh(sample: SampleInput) -> SampleInput:
    """An independent copy of a sample on its own devices (in-place checks must not share inputs)."""
    def same_place(t: torch.Tensor) -> torch.Tensor:
        return exact_copy(t, str(t.device))

    return SampleInput(
        _map_keep_devices(sample.input, same_place),
        args=_map_keep_devices(sample.args, same_place),
        kwargs=_map_keep_devices(sample.kwargs, same_place),
        output_process_fn_grad=sample.output_process_fn_grad,
        broadcasts_input=sample.broadcasts_input,
        name=sample.name,
    )


def _map_keep_devices(obj: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, list):
        return [_map_keep_devices(o, fn) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_map_keep_devices(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map_keep_devices(v, fn) for k, v in obj.items()}
    return obj


def to_cpu(obj: Any) -> Any:
    return tree_map(lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x, obj)


def _targets_neuron(sample: SampleInput) -> bool:
    """False when the sample itself sends the result elsewhere (zeros_like(x, device="cpu"), x.to("cpu"))."""
    leaves, _ = tree_flatten((sample.input, sample.args, sample.kwargs))
    on_neuron = False
    for leaf in leaves:
        if isinstance(leaf, torch.device):
            if leaf.type != DEVICE:
                return False
            on_neuron = True
        elif isinstance(leaf, str) and leaf.split(":")[0] in ("cpu", "cuda", "meta"):
            return False
        elif isinstance(leaf, str) and leaf.split(":")[0] == DEVICE:
            on_neuron = True
        elif isinstance(leaf, torch.Tensor) and leaf.device.type == DEVICE:
            on_neuron = True
    return on_neuron  # a factory call without a device argument builds on the CPU


def misplaced_results(result: Any) -> list[str]:
    """Tensor results that are not on neuron (an op on neuron inputs must leave its results there)."""
    leaves, _ = tree_flatten(result)
    return [str(t.device) for t in leaves if isinstance(t, torch.Tensor) and t.device.type != DEVICE]


_current_op = ""


def compare(actual: Any, expected: Any, dtype: torch.dtype) -> None:
    """assert_close leaf by leaf; each tensor is held to its own dtype's tolerance (a float32 op with
    dtype=torch.float64 returns float64 computed in float32, so it gets float64's tolerance)."""
    actual, expected = to_cpu(actual), to_cpu(expected)
    a_leaves, a_spec = tree_flatten(actual)
    e_leaves, e_spec = tree_flatten(expected)
    assert len(a_leaves) == len(e_leaves), f"different result structure: {a_spec} vs {e_spec}"
    for a, e in zip(a_leaves, e_leaves):
        leaf_dtype = e.dtype if isinstance(e, torch.Tensor) else dtype
        if _metadata_only():
            if isinstance(e, torch.Tensor):
                assert isinstance(a, torch.Tensor) and a.shape == e.shape and a.dtype == e.dtype, (a, e)
            continue
        torch.testing.assert_close(a, e, equal_nan=True, check_device=False, check_layout=False,
                                   **tolerances(leaf_dtype, _current_op))


def _metadata_only() -> bool:
    return _current_op in known_failures.METADATA_ONLY


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


def check_sample(op: OpInfo, neuron: SampleInput, dtype: torch.dtype) -> None:
    cpu = sample_to_cpu(neuron)
    expected = reference(op, cpu)
    actual = call(op, neuron)
    if _targets_neuron(neuron):
        misplaced = misplaced_results(actual)
        assert not misplaced, f"results on {misplaced}, expected neuron"
    compare(op_process(neuron, actual), op_process(cpu, expected), dtype)


def check_noncontig(op: OpInfo, neuron: SampleInput, dtype: torch.dtype) -> None:
    # Both devices get the same non-contiguous layout (noncontiguous_like is deterministic), so ops that
    # read storage order (as_strided, random fills) compare like for like.
    cpu = sample_to_cpu(neuron).noncontiguous()
    expected = reference(op, cpu)
    actual = call(op, neuron.noncontiguous())
    assert not _targets_neuron(neuron) or not misplaced_results(actual), "results left neuron"
    compare(op_process(neuron, actual), op_process(cpu, expected), dtype)


def op_process(sample: SampleInput, result: Any) -> Any:
    # output_process_fn_grad makes results comparable where an op's answer is not unique (signs of singular
    # vectors, ...), exactly as test_ops.test_compare_cpu uses it.
    return sample.output_process_fn_grad(result)


def _out_like(expected: Any, device: str, resize: bool) -> Any:
    def make(t: torch.Tensor) -> torch.Tensor:
        return torch.empty(0 if resize else t.shape, dtype=t.dtype, device=device)

    if isinstance(expected, torch.Tensor):
        return make(expected)
    if isinstance(expected, (tuple, list)) and expected and all(isinstance(t, torch.Tensor) for t in expected):
        made = (make(t) for t in expected)
        return type(expected)(made) if isinstance(expected, list) else tuple(made)
    raise SkipSample("out= needs tensor results")


def check_out(op: OpInfo, neuron: SampleInput, dtype: torch.dtype, index: int) -> None:
    cpu = sample_to_cpu(neuron)
    functional = reference(op, cpu)
    resize = index % 2 == 1
    cpu_out = _out_like(functional, "cpu", resize)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # resizing a non-empty out= warns, as on the CPU
        reference(op, cpu, out=cpu_out)
        out = _out_like(functional, DEVICE, resize)
        returned = call(op, neuron, out=out)
    compare(out, cpu_out, dtype)
    if returned is None:
        return
    outs = out if isinstance(out, (tuple, list)) else (out,)
    rets = returned if isinstance(returned, (tuple, list)) else (returned,)
    for o, r in zip(outs, rets):
        assert r.data_ptr() == o.data_ptr() and r.device.type == DEVICE, "out= did not return the out tensor"


def check_inplace(op: OpInfo, neuron: SampleInput, dtype: torch.dtype) -> None:
    inplace = op.get_inplace()
    if inplace is None:
        raise SkipSample("no in-place variant")
    if not isinstance(neuron.input, torch.Tensor):
        raise SkipSample("in-place needs a tensor input")
    cpu = sample_to_cpu(neuron)
    try:
        expected = call(inplace, cpu)
    except Exception as cpu_error:  # the CPU refuses: neuron must refuse the same way
        try:
            call(inplace, neuron)
        except Exception as neuron_error:
            assert type(neuron_error) is type(cpu_error), (
                f"CPU raised {type(cpu_error).__name__}, neuron {type(neuron_error).__name__}: {neuron_error}"
            )
            return
        raise AssertionError(f"CPU raised {type(cpu_error).__name__} ({_short(cpu_error)}); neuron did not") from None
    target = neuron.input
    ptr = target.data_ptr()
    actual = call(inplace, neuron)
    assert actual is target or actual.data_ptr() == ptr, "in-place variant did not return its input"
    compare(target, cpu.input, dtype)
    compare(actual, expected, dtype)


def _grad_inputs(sample: SampleInput) -> list[torch.Tensor]:
    leaves, _ = tree_flatten((sample.input, sample.args, sample.kwargs))
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]


def _differentiable(result: Any) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(result)
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad and t.grad_fn is not None]


def check_grad(op: OpInfo, neuron: SampleInput, dtype: torch.dtype) -> None:
    # Both sides get fresh leaves: the CPU twin's are always new, and some generated samples' own leaves do
    # not receive a gradient even on the CPU (istft's window, when the sample made it), which would compare
    # a fresh CPU leaf against a stale neuron one.
    neuron = fresh(neuron)
    cpu = sample_to_cpu(neuron)
    cpu_inputs = _grad_inputs(cpu)
    if not cpu_inputs:
        raise SkipSample("no input requires grad")
    neuron_inputs = _grad_inputs(neuron)
    cpu_out = _differentiable(op_process(cpu, reference(op, cpu)))
    if not cpu_out:
        raise SkipSample("no differentiable output")
    neuron_out = _differentiable(op_process(neuron, call(op, neuron)))
    assert len(neuron_out) == len(cpu_out), "different number of differentiable outputs"
    gen = torch.Generator().manual_seed(SEED)
    cotangents = [torch.randn(o.shape, generator=gen, dtype=torch.float32).to(o.dtype) for o in cpu_out]
    expected = torch.autograd.grad(cpu_out, cpu_inputs, cotangents, allow_unused=True)
    actual = torch.autograd.grad(neuron_out, neuron_inputs, [c.to(o.device) for c, o in zip(cotangents, neuron_out)],
                                 allow_unused=True)
    for a, e in zip(actual, expected):
        if e is None:
            assert a is None, "neuron produced a gradient the CPU did not"
            continue
        assert a is not None and a.device.type == DEVICE, "gradient missing or not on neuron"
        compare(a, e, dtype)


def _as_user_code(fn: Any, depth: int = 0) -> Any:
    """``fn`` as if a user had written it: Dynamo never traces into files of torch itself, so an OpInfo whose
    op is a lambda in ``torch/testing`` (``lambda x: torch.cov(x)``) would run eagerly whole, as a call into
    a skipped function. A copy of the function (and of the torch/testing helpers it calls by name) with
    another file name is traced like user code."""
    if (depth > 3 or not isinstance(fn, types.FunctionType)
            or f"{os.sep}torch{os.sep}testing{os.sep}" not in fn.__code__.co_filename):
        return fn
    scope = dict(fn.__globals__)
    for name in fn.__code__.co_names:
        if name in scope and scope[name] is not fn:
            scope[name] = _as_user_code(scope[name], depth + 1)
    copy = types.FunctionType(fn.__code__.replace(co_filename="<user code>"), scope, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


def check_compiled(op: OpInfo, neuron: SampleInput, dtype: torch.dtype) -> str:
    """The op inside ``torch.compile(backend="neuron")``, from a fresh Dynamo, against the CPU; returns ""
    when the whole call was one fully lowered graph, else what ran eagerly."""
    import torch._dynamo

    cpu = sample_to_cpu(neuron)
    expected = reference(op, cpu)
    torch._dynamo.reset()
    torch.neuron.reset_dynamo_metrics()

    fn = _as_user_code(op.op)

    def user_fn(inp, *args, **kwargs):
        return fn(inp, *args, **kwargs)

    torch.manual_seed(SEED)
    actual = torch.compile(user_fn, backend="neuron")(neuron.input, *neuron.args, **neuron.kwargs)
    if _targets_neuron(neuron):
        misplaced = misplaced_results(actual)
        assert not misplaced, f"results on {misplaced}, expected neuron"
    compare(op_process(neuron, actual), op_process(cpu, expected), dtype)
    m = torch.neuron.get_dynamo_metrics()
    if m["graphs_compiled"] == 0:
        return "not compiled: Dynamo ran the call eagerly (graph break)"
    if m["eager_pieces"] or m["fallback_ops"]:
        return "partly eager: " + ", ".join(sorted(m["fallback_ops"])) if m["fallback_ops"] else "partly eager"
    return ""


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
    """Generated on neuron, as PyTorch's device tests do (factories get device="neuron", tensors a sample
    must keep on the host stay there); each check derives the CPU twin with sample_to_cpu."""
    torch.manual_seed(SEED)
    return iter(op.sample_inputs(DEVICE, dtype, requires_grad=kind == "grad"))


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
    except Exception as e:  # making the sample on neuron failed: that is neuron's failure
        outcomes.append(Outcome(key, dtype, kind, len(outcomes), "fail", f"sample generation on neuron: {_short(e)}"))
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
        elif kind == COMPILED:
            note = check_compiled(op, cpu, dtype)
            return Outcome(key, dtype, kind, index, "pass", note)
        else:
            raise ValueError(f"unknown check kind {kind!r}; expected one of {(*KINDS, COMPILED)}")
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
