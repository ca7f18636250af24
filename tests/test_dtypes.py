"""Trainium's dtype rules on the neuron device (DESIGN.md, Fidelity; docs/eager.md).

float64: stored as float64, computed in float32 (NeuronCores have no fp64 arithmetic), one warning per
process naming the first op; TORCHNEURON_FP64=native computes in float64. Data movement keeps every bit.
bf16/fp16/fp32 and the integer and bool types: bit-exact with the CPU. fp8: storable and copyable.
"""

from __future__ import annotations

import pytest
import torch

from tests.helpers import run_python

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

def emulated(fn, *cpu_args):
    """What a NeuronCore computes: float64 inputs rounded to float32, the op in float32, stored as float64."""
    args = [a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.float64 else a for a in cpu_args]
    out = fn(*args)
    return out.double() if out.dtype == torch.float32 else out


def on_neuron(fn, *cpu_args):
    args = [a.to("neuron") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    return fn(*args).cpu()


# ------------------------------------------------------------------------------------------------ float64

FP64_OPS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "exp": lambda a, b: torch.exp(a),
    "matmul": lambda a, b: a @ b.T,
    "sum": lambda a, b: a.sum(),
    "softmax": lambda a, b: torch.softmax(a, -1),
    "cumsum": lambda a, b: torch.cumsum(a, 0),
}


@pytest.mark.parametrize("name", list(FP64_OPS))
def test_float64_is_computed_in_float32_and_stored_as_float64(name):
    torch.manual_seed(0)
    a = torch.randn(8, 8, dtype=torch.float64) * (1 + 1e-9)
    b = torch.rand(8, 8, dtype=torch.float64) + 0.5
    fn = FP64_OPS[name]
    got = on_neuron(fn, a, b)
    assert got.dtype == torch.float64
    assert torch.equal(got, emulated(fn, a, b)), "not the float32 computation"
    assert not torch.equal(got, fn(a, b)), "computed in float64: the test inputs must tell the two apart"


def test_float64_precision_is_float32_precision():
    x = torch.tensor([1.0], dtype=torch.float64, device="neuron")
    assert (x + 1e-10).item() == 1.0  # float32 cannot hold 1 + 1e-10
    assert torch.tensor([1.0 + 1e-10], dtype=torch.float64).add(0).item() != 1.0  # the CPU can


def test_float64_data_movement_keeps_every_bit():
    x = torch.tensor([1.0 + 1e-12, 3.141592653589793, 1e300, -2.0**-1074], dtype=torch.float64)
    n = x.to("neuron")
    for moved in (n, n.clone(), torch.cat([n, n])[:4], n[torch.tensor([0, 1, 2, 3], device="neuron")],
                  torch.index_select(n, 0, torch.arange(4, device="neuron")), n.flip(0).flip(0),
                  torch.where(n > -10, n, n), n.view(2, 2).t().contiguous().t().reshape(4)):
        assert moved.dtype == torch.float64
        assert torch.equal(moved.cpu(), x)


def test_float64_in_place_and_out_keep_the_callers_tensor():
    x = torch.ones(4, dtype=torch.float64, device="neuron")
    ptr = x.data_ptr()
    x.add_(1e-10)
    assert x.data_ptr() == ptr and x.dtype == torch.float64
    assert torch.equal(x.cpu(), torch.ones(4, dtype=torch.float64))
    out = torch.empty(0, dtype=torch.float64, device="neuron")
    r = torch.mul(torch.full((3,), 1.0 + 1e-10, dtype=torch.float64, device="neuron"), 2, out=out)
    assert r.data_ptr() == out.data_ptr() and out.shape == (3,) and out.dtype == torch.float64
    assert torch.equal(out.cpu(), torch.full((3,), 2.0, dtype=torch.float64))


def test_float64_type_promotion_is_pytorchs():
    f32 = torch.ones(3, device="neuron")
    scalar64 = torch.tensor(2.0, dtype=torch.float64, device="neuron")
    assert (f32 * scalar64).dtype == torch.float32  # a 0-dim float64 does not promote a float32 tensor
    assert f32.sum(dtype=torch.float64).dtype == torch.float64
    assert torch.arange(3, dtype=torch.float64, device="neuron").dtype == torch.float64
    assert (torch.ones(3, dtype=torch.float64, device="neuron") > 0).dtype == torch.bool
    values, indices = torch.ones(2, 3, dtype=torch.float64, device="neuron").max(1)
    assert values.dtype == torch.float64 and indices.dtype == torch.int64


def test_float64_autograd():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, device="neuron", requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.dtype == torch.float64 and torch.equal(x.grad.cpu(), torch.tensor([2.0, 4.0], dtype=torch.float64))


def test_float64_warns_once_per_process_naming_the_op():
    proc = run_python("""
        import warnings, torch, torchneuron
        warnings.simplefilter("always")
        x = torch.ones(3, dtype=torch.float64, device="neuron")
        y = torch.exp(x)
        z = y * 2 + 1
        print(z.dtype)
    """, timeout=120, TORCHNEURON_FP64="emulate")
    notices = [line for line in proc.stderr.splitlines() if "computes on float64" in line]
    assert len(notices) == 1, proc.stderr
    assert "aten::exp" in notices[0] and "TORCHNEURON_FP64=native" in notices[0]
    assert "torch.float64" in proc.stdout


def test_fp64_native_opts_out():
    proc = run_python("""
        import warnings, torch, torchneuron
        warnings.simplefilter("always")
        x = torch.tensor([1.0], dtype=torch.float64, device="neuron")
        print(repr((x + 1e-10).item()))
    """, timeout=120, TORCHNEURON_FP64="native")
    assert float(proc.stdout.strip()) == 1.0 + 1e-10
    assert "computes on float64" not in proc.stderr


# ------------------------------------------------------------------------------- exact dtypes vs the CPU

EXACT_FLOAT = [torch.float32, torch.bfloat16, torch.float16]
EXACT_INT = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]


@pytest.mark.parametrize("dtype", EXACT_FLOAT, ids=str)
def test_float_types_are_bit_exact_with_the_cpu(dtype):
    torch.manual_seed(0)
    a, b = torch.randn(16, 16).to(dtype), torch.randn(16, 16).to(dtype)
    for fn in (lambda x, y: x + y, lambda x, y: x * y - y, lambda x, y: x @ y, lambda x, y: torch.tanh(x),
               lambda x, y: x.sum(0), lambda x, y: torch.softmax(x, 1), lambda x, y: x.to(torch.float32)):
        want = fn(a, b)
        got = fn(a.to("neuron"), b.to("neuron"))
        assert got.dtype == want.dtype
        assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("dtype", EXACT_INT, ids=str)
def test_integer_types_are_exact_including_wraparound(dtype):
    info = torch.iinfo(dtype)
    a = torch.tensor([info.max, info.min, 7, 0, 3], dtype=dtype)
    b = torch.tensor([1, 1, 2, 5, 3], dtype=dtype)
    for fn in (lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x // y.clamp(min=1),
               lambda x, y: x % y.clamp(min=1), lambda x, y: x & y, lambda x, y: x ^ y, lambda x, y: x.sum(),
               lambda x, y: x.max(), lambda x, y: x >> 1, lambda x, y: torch.cumsum(x, 0)):
        want = fn(a, b)
        got = fn(a.to("neuron"), b.to("neuron"))
        assert got.dtype == want.dtype
        assert torch.equal(got.cpu(), want)


def test_bool_is_exact():
    a = torch.tensor([True, False, True, False])
    b = torch.tensor([True, True, False, False])
    n = a.to("neuron"), b.to("neuron")
    assert torch.equal((n[0] & n[1]).cpu(), a & b)
    assert torch.equal((n[0] | ~n[1]).cpu(), a | ~b)
    assert n[0].sum().item() == 2 and n[0].any().item() and not n[0].all().item()


# ---------------------------------------------------------------------------------------------------- fp8

FP8 = [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz]


@pytest.mark.parametrize("dtype", FP8, ids=str)
def test_fp8_is_storable_and_copyable(dtype):
    values = torch.tensor([0.0, 0.5, -1.0, 2.0, 3.5, -0.25, 8.0, 1.125])
    cpu = values.to(dtype)
    n = cpu.to("neuron")
    assert n.dtype == dtype and n.device.type == "neuron"
    assert torch.equal(n.cpu().view(torch.uint8), cpu.view(torch.uint8))  # bit-exact round trip
    assert torch.equal(n.clone().cpu().view(torch.uint8), cpu.view(torch.uint8))
    assert torch.equal(n[2:5].contiguous().cpu().view(torch.uint8), cpu[2:5].view(torch.uint8))
    assert torch.equal(n.to("neuron:1").cpu().view(torch.uint8), cpu.view(torch.uint8))
    # conversions on the device match the CPU's rounding
    assert torch.equal(values.to("neuron").to(dtype).cpu().view(torch.uint8), cpu.view(torch.uint8))
    assert torch.equal(n.to(torch.float32).cpu(), cpu.to(torch.float32))
    assert torch.equal(n.view(torch.uint8).cpu(), cpu.view(torch.uint8))
    empty = torch.empty(4, 4, dtype=dtype, device="neuron")
    empty.copy_(cpu.view(2, 4).repeat(2, 1))
    assert torch.equal(empty.cpu().view(torch.uint8), cpu.view(2, 4).repeat(2, 1).view(torch.uint8))
