"""Writes between overlapping views of one storage: the neuron device refuses what the CPU refuses, with the
CPU's error, and gives the CPU's values for everything else (copy_, host kernels with out= / in place, NKI
ops that write an argument)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torchneuron
from tests.custom_ops import kernels

PARTIAL = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location. Please clone() the tensor before performing the operation.")
INTERNAL = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")


def outcome(device: str, fn: Callable[[torch.Tensor], object], base: torch.Tensor | None = None) -> object:
    """What `fn(x)` does to x on `device`: x's values afterwards, or the error (type and first line)."""
    x = (torch.arange(16.0).reshape(4, 4) if base is None else base).to(device, copy=True)
    try:
        fn(x)
    except Exception as e:  # noqa: BLE001  (the outcome is compared, whatever it is)
        return type(e), str(e).splitlines()[0]
    return x.cpu()


def assert_same_as_cpu(fn: Callable[[torch.Tensor], object], base: torch.Tensor | None = None) -> object:
    cpu, neuron = outcome("cpu", fn, base), outcome("neuron", fn, base)
    if isinstance(cpu, torch.Tensor):
        assert isinstance(neuron, torch.Tensor), neuron
        assert torch.equal(neuron, cpu), (neuron, cpu)
    else:
        assert isinstance(neuron, tuple), neuron
        assert neuron[0] is cpu[0] and neuron[1].startswith(cpu[1]), (neuron, cpu)
    return cpu


REFUSED = {
    "transpose": (lambda x: x.copy_(x.t()), PARTIAL),
    "shifted rows": (lambda x: x[1:].copy_(x[:-1]), PARTIAL),
    "flat shift": (lambda x: x.view(-1)[1:].copy_(x.view(-1)[:-1]), PARTIAL),
    "expanded destination": (lambda x: x[0].expand(4, 4).copy_(x), INTERNAL),
    "add out= transpose": (lambda x: torch.add(x, 1, out=x.t()), PARTIAL),
    "add_ transpose": (lambda x: x.add_(x.t()), PARTIAL),
    "mul out= shifted": (lambda x: torch.mul(x[1:], 2, out=x[:-1]), PARTIAL),
    "exp out= expanded": (lambda x: torch.exp(x[0], out=x[0].expand(4, 4)), INTERNAL),
    "index_copy_ transpose": (lambda x: x.t().index_copy_(0, torch.arange(4, device=x.device), x), PARTIAL),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_overlapping_writes_raise_the_cpu_error(case):
    fn, message = REFUSED[case]
    cpu = assert_same_as_cpu(fn)
    assert cpu == (RuntimeError, message)


def test_the_issue_case_leaves_x_unchanged():
    x = torch.arange(16.0, device="neuron").reshape(4, 4)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x.copy_(x.t())
    assert torch.equal(x.cpu(), torch.arange(16.0).reshape(4, 4))


@pytest.mark.parametrize("direction", ["to neuron", "to cpu"])
def test_expanded_destination_is_refused_in_both_directions(direction):
    host = torch.arange(16.0).reshape(4, 4)
    dev = host.to("neuron")
    if direction == "to neuron":
        dst, src = dev[0].expand(4, 4), host
    else:
        dst, src = host[0].expand(4, 4), dev
    with pytest.raises(RuntimeError) as err:
        dst.copy_(src)
    assert str(err.value).splitlines()[0] == INTERNAL


ALLOWED = {
    "same tensor": lambda x: x.copy_(x),
    "same view": lambda x: x.copy_(x[:]),
    "same bytes as another view object": lambda x: x.view(16).copy_(x.view(-1)),
    "one row from another": lambda x: x[0].copy_(x[1]),
    "disjoint halves": lambda x: x[:2].copy_(x[2:]),
    "disjoint strided": lambda x: x[:, ::2].copy_(x[:, 1::2]),
    "converting copy of a transpose": lambda x: x.copy_(x.t().double()),
    "add out= disjoint rows": lambda x: torch.add(x[0], x[1], out=x[2]),
    "in place on itself": lambda x: x.add_(x),
}


@pytest.mark.parametrize("case", list(ALLOWED))
def test_legitimate_copies_between_views_match_the_cpu(case):
    assert isinstance(assert_same_as_cpu(ALLOWED[case]), torch.Tensor)


def test_a_host_kernel_over_many_storages_still_sees_the_overlap():
    # more storages than the per-thread cache of host aliases holds: the out= view of x must still share a
    # host storage with x's input view, or cat would write rows it reads later
    def cat_into_x(x):
        parts = [torch.full((1, 4), float(i), device=x.device) for i in range(9)]
        torch.cat([*parts, x[:1]], out=x)

    cpu = assert_same_as_cpu(cat_into_x, torch.arange(40.0).reshape(10, 4))
    assert cpu == (RuntimeError, PARTIAL)


# ---- random views of one storage: neuron does what the CPU does (the same values or the same error) ----

def _view(x: torch.Tensor, spec: tuple[str, int, int]) -> torch.Tensor:
    """A 2x2 view of 4x4 `x`: strided, transposed, contiguous (byte copies), every other element, expanded."""
    kind, a, b = spec
    if kind == "block":
        return x[a:a + 2, b:b + 2]
    if kind == "t":
        return x.t()[a:a + 2, b:b + 2]
    if kind == "flat":
        return x.reshape(-1)[a * 4 + b:a * 4 + b + 4].view(2, 2)
    if kind == "step":
        return x[a % 2::2, b % 2::2][:2, :2]
    if kind == "skew":
        return x.as_strided((2, 2), (5, 1), a + b)
    return x[a, b:b + 2].expand(2, 2)  # "expand"


VIEWS = st.tuples(st.sampled_from(["block", "t", "flat", "step", "skew", "expand"]), st.integers(0, 2),
                  st.integers(0, 2))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dst=VIEWS, src=VIEWS, dtype=st.sampled_from([torch.float32, torch.int64]))
def test_copies_between_random_views_match_the_cpu(dst, src, dtype):
    assert_same_as_cpu(lambda x: _view(x, dst).copy_(_view(x, src)), torch.arange(16).reshape(4, 4).to(dtype))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dst=VIEWS, src=VIEWS)
def test_out_kernels_between_random_views_match_the_cpu(dst, src):
    assert_same_as_cpu(lambda x: torch.mul(_view(x, src), 3, out=_view(x, dst)))


# ---- NKI ops that write an argument ----

@torchneuron.nki_op("tn_overlap::scale_into_", mutates_args=("out",))
def scale_into_(x: torch.Tensor, out: torch.Tensor) -> None:
    kernels.scale_into(x, out)


@torch.library.custom_op("tn_overlap::cpu_scale_into_", mutates_args=("out",))
def cpu_scale_into_(x: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(x * 2)


@pytest.mark.parametrize("out_view", ["contiguous", "strided"])
def test_nki_op_writing_over_its_strided_input_keeps_its_writes(out_view):
    # The kernel reads a copy of the strided input (the simulator's buffers are flat) and stores the output
    # over the same memory; that copy must not be written back over what the kernel stored. A torch custom op
    # with mutated args is not refused on the CPU either: its own code decides (here, as the kernel's: read
    # all, then write), and the neuron op gives what the same code gives on CPU tensors.
    def run(op, buf):
        x = buf if out_view == "contiguous" else buf[:, :4]
        op(x.t(), x)
        return buf

    base = torch.arange(32.0).reshape(4, 8)
    start = base[:, :4].clone() if out_view == "strided" else torch.arange(16.0).reshape(4, 4)
    got = run(scale_into_, (start if out_view == "contiguous" else base).to("neuron"))
    want = run(cpu_scale_into_, (start if out_view == "contiguous" else base).clone())
    assert torch.equal(got.cpu(), want)
    assert torch.equal(want if out_view == "contiguous" else want[:, :4], start.t() * 2)
