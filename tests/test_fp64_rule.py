"""One float64 rule for both eager executors (torchneuron/fp64_rule.py): the host path and strict mode
(TORCHNEURON_EAGER=lowered) give the same bits for every float64 op, and those bits are the rule's.

The inputs are nonzero integers plus 2**-40: float32 keeps the integer and drops the fraction, and every op below is
exact on integers in float32, so a result shows whether its inputs were converted (fraction gone) or moved as
they are (fraction kept), independently of how either executor rounds.
"""

import pytest
import torch
import torch.nn.functional as F

from tests.helpers import ROOT
from torchneuron import fp64_rule
from torchneuron.programs import fallbacks, strict_eager
from torchneuron.programs.single_op import OpProgram, program_cache

TINY = 2.0 ** -40


def _inputs():
    g = torch.Generator().manual_seed(0)

    def ints():  # nonzero: 0 + 2**-40 would be a float32 number itself
        return torch.randint(1, 9, (4, 6), generator=g) * (torch.randint(0, 2, (4, 6), generator=g) * 2 - 1)

    return ints().double() + TINY, ints().double() + TINY


IDX = torch.tensor([[0, 2, 1, 5, 4, 3]] * 4)
ROWS = torch.tensor([3, 0, 0, 2])

# name -> (function of two float64 tensors on one device, does the rule convert it?)
CASES = {
    "add": (lambda a, b: a + b, True),
    "mul_scalar": (lambda a, b: a * 3, True),
    "neg_abs": (lambda a, b: (-a).abs(), True),
    "maximum": (lambda a, b: torch.maximum(a, b), True),
    "sum": (lambda a, b: a.sum(1), True),
    "mm": (lambda a, b: a @ b.t(), True),
    "add_inplace": (lambda a, b: a.clone().add_(b), True),
    "sum_dtype_float64_of_float32": (lambda a, b: a.float().sum(1, dtype=torch.float64), True),
    "cat": (lambda a, b: torch.cat([a, b]), False),
    "stack": (lambda a, b: torch.stack([a, b], 1), False),
    "gather": (lambda a, b: a.gather(1, IDX.to(a.device)), False),
    "index": (lambda a, b: a[ROWS.to(a.device)], False),
    "index_select": (lambda a, b: a.index_select(0, ROWS.to(a.device)), False),
    "where": (lambda a, b: torch.where(a > b, a, b), False),
    "flip": (lambda a, b: a.flip(1), False),
    "masked_fill": (lambda a, b: a.masked_fill(a > 0, 1.0 / 3.0), False),
    "constant_pad": (lambda a, b: F.pad(a, (1, 2), value=1.0 / 3.0), False),
    "scatter_src": (lambda a, b: a.scatter(1, IDX.to(a.device), b), False),
    # float64 next to float32: PyTorch's own promotion, unconverted (some kernels would refuse the mix)
    "mixed_with_float32": (lambda a, b: a + b.float(), False),
}


@pytest.fixture(scope="module")
def results():
    assert fp64_rule.emulated()  # the default mode; TORCHNEURON_FP64=native turns the rule off
    a, b = _inputs()
    an, bn = a.to("neuron"), b.to("neuron")
    host = {name: fn(an, bn).cpu() for name, (fn, _) in CASES.items()}
    lowered, programs = {}, {}
    strict_eager.install(True)
    fallbacks.install_policy()
    try:
        for name, (fn, _) in CASES.items():
            program_cache().clear()
            lowered[name] = fn(an, bn).cpu()
            built = [p for p in program_cache()._programs.values() if isinstance(p, OpProgram)]
            programs[name] = built

    finally:
        strict_eager.install(False)
        fallbacks.install_policy()
        program_cache().clear()
    return a, b, host, lowered, programs


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int64) if t.dtype == torch.float64 else t


@pytest.mark.parametrize("name", list(CASES))
def test_host_and_lowered_give_identical_bits(results, name):
    _, _, host, lowered, programs = results
    assert programs[name], f"{name} did not run as a lowered program"
    if CASES[name][1] and name != "sum_dtype_float64_of_float32":  # converted: no float64 reaches the IR
        assert not any("f64" in p.stablehlo for p in programs[name]), name
    assert host[name].dtype == lowered[name].dtype == torch.float64
    assert torch.equal(_bits(host[name]), _bits(lowered[name]))


@pytest.mark.parametrize("name", list(CASES))
def test_the_bits_are_the_rules(results, name):
    a, b, host, _, _ = results
    fn, converts = CASES[name]
    if converts:  # computed on float32 stand-ins, stored as float64
        want = fn(a.float(), b.float()).double()
    else:  # moved (or promoted) as on the CPU
        want = fn(a, b)
    assert torch.equal(_bits(host[name]), _bits(want))
    kept_fraction = ((host[name] - host[name].round()).abs() == TINY).any()
    assert bool(kept_fraction) != converts


def test_the_table_is_the_device_layers():
    # Fp64Emulation.cpp holds no op list of its own: the exempt ops come from fp64_rule at import
    source = (ROOT / "csrc" / "aten" / "native" / "Fp64Emulation.cpp").read_text()
    assert "aten::cat" not in source and "aten::gather" not in source
    assert fp64_rule.is_exempt("aten::cat") and fp64_rule.is_exempt("aten::scatter.src")
    assert not fp64_rule.is_exempt("aten::scatter.reduce") and not fp64_rule.is_exempt("aten::add.Tensor")
