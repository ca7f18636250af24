"""Auto-cast, one meaning everywhere: a compiled FP32 model under ``matmult`` computes exactly what bf16-rounded
matmul operands with FP32 accumulation give (the CPU reference below), ``none`` what FP32 gives; the setting
reaches neuronx-cc's command line and the compile cache key."""

import pytest
import torch

import torchneuron
from torchneuron.compiler import neuronx_cc
from torchneuron.lowering import auto_cast


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.ReLU(), torch.nn.Linear(96, 32))


def _reference(model: torch.nn.Module, x: torch.Tensor, cast_type: str | None) -> torch.Tensor:
    """The model on CPU with its matmul operands rounded to ``cast_type`` (None: plain FP32), biases,
    activations and accumulation in FP32 (float64 accumulation stands for the exact sum)."""
    def r(t):
        return t if cast_type is None else auto_cast.round_to(t, ("matmult", cast_type))

    lin1, lin2 = model[0], model[2]
    h = (r(x).double() @ r(lin1.weight).double().T + lin1.bias.double()).float().relu()
    return (r(h).double() @ r(lin2.weight).double().T + lin2.bias.double()).float()


def _compiled(model, x, setting):
    torch._dynamo.reset()
    with torchneuron.compile_options(auto_cast=setting):
        out = torch.compile(model.to("neuron"), backend="neuron")(x.to("neuron")).cpu()
    model.cpu()
    return out


@pytest.mark.parametrize("cast_type", ["bf16", "fp16", "tf32", "fp8_e4m3"])
def test_matmult_rounds_the_matmul_operands_and_accumulates_in_fp32(cast_type):
    model, x = _model(), torch.randn(16, 64)
    none, cast = _compiled(model, x, "none"), _compiled(model, x, f"matmult-{cast_type}")
    ref_none, ref_cast = _reference(model, x, None), _reference(model, x, cast_type)
    # each output matches its own reference to FP32 summation-order noise ...
    noise = 2e-6
    torch.testing.assert_close(none, ref_none, rtol=0, atol=noise)
    torch.testing.assert_close(cast, ref_cast, rtol=0, atol=noise)
    # ... and the two settings differ by what the rounding predicts, far above that noise
    predicted, measured = ref_cast - ref_none, cast - none
    assert predicted.abs().max() > 50 * noise
    torch.testing.assert_close(measured, predicted, rtol=0, atol=2 * noise)


def test_none_is_the_default_and_equals_eager():
    assert str(auto_cast.current()) == "none"
    model, x = _model(), torch.randn(8, 64)
    torch.testing.assert_close(_compiled(model, x, None), model(x), rtol=1e-5, atol=1e-5)


def test_compile_options_restores_the_previous_setting():
    with torchneuron.compile_options(auto_cast="matmult"):
        assert str(auto_cast.current()) == "matmult-bf16"
        with torchneuron.compile_options(auto_cast=("all", "fp16")):
            assert str(auto_cast.current()) == "all-fp16"
        assert str(auto_cast.current()) == "matmult-bf16"
    assert str(auto_cast.current()) == "none"


def test_round_to_matches_the_storage_types():
    x = torch.randn(1000) * 100
    assert torch.equal(auto_cast.round_to(x, "matmult-bf16"), x.bfloat16().float())
    assert torch.equal(auto_cast.round_to(x, "matmult-fp8_e4m3"), x.to(torch.float8_e4m3fn).float())
    t = auto_cast.round_to(x, "matmult-tf32")
    # tf32 keeps 10 mantissa bits: the 13 low bits of every result are zero, and the error is at most half a unit
    assert ((t.view(torch.int32) & 0x1FFF) == 0).all()
    assert ((t - x).abs() <= x.abs() * 2.0 ** -11).all()


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="auto_cast mode 'fast' is not one of none, matmult, all"):
        torchneuron.compile_options(auto_cast="fast")
    with pytest.raises(ValueError, match="auto_cast type 'int4' is not one of bf16, fp16, tf32, fp8_e4m3"):
        auto_cast.parse("matmult-int4")
    assert str(auto_cast.current()) == "none"


def test_neuronx_cc_gets_the_setting_on_its_command_line(tmp_path):
    def argv():
        return neuronx_cc.command(tmp_path / "m.mlir", tmp_path / "m.neff", target="trn1", lnc=1, opt_level=2)

    assert "--auto-cast=none" in argv() and not any(a.startswith("--auto-cast-type") for a in argv())
    with torchneuron.compile_options(auto_cast="matmult-fp16"):
        assert argv()[argv().index("--auto-cast=matmult") + 1] == "--auto-cast-type=fp16"
        assert "--auto-cast=matmult" in neuronx_cc.extra_flags()  # so it is part of the compile cache key
    assert "--auto-cast=none" in argv()


def test_all_rounds_every_fp32_operation_input():
    model, x = _model(), torch.randn(16, 64)
    lin1, lin2 = model[0], model[2]

    def r(t):
        return auto_cast.round_to(t, "all-bf16")

    h = torch.relu(r((r(x).double() @ r(lin1.weight).double().T + r(lin1.bias).double()).float()))
    ref = (r(h).double() @ r(lin2.weight).double().T + r(lin2.bias).double()).float()
    err = (_compiled(model, x, "all") - ref).abs()
    # most outputs exactly as predicted; a few see one intermediate land on the other side of a bf16 rounding
    # boundary (FP32 summation order decides which), i.e. one bf16 step of one input, never more
    assert err.median() < 2e-6 and err.max() < 1e-3
    assert (ref - _reference(model, x, "bf16")).abs().mean() > 25 * 2e-6  # all is not matmult


def test_estimate_assumes_the_compile_setting_and_says_so():
    from torchneuron.estimator import estimate

    with torch.device("meta"):
        model, x = _model(), torch.randn(512, 64)
    plain = estimate(model, x, target="trn1", mode="compiled")
    assert plain.auto_cast == "none" and "auto-cast none (torch.compile's default" in str(plain)
    with torchneuron.compile_options(auto_cast="matmult"):
        cast = estimate(model, x, target="trn1", mode="compiled")
    assert cast.auto_cast == "matmult-bf16" and "auto-cast matmult-bf16" in str(cast)
    tensor = [sum(op.engines.get("Tensor", 0) for op in e.ops) for e in (plain, cast)]
    assert tensor[1] == pytest.approx(tensor[0] / 4)  # FP32 matmuls at a quarter of the 16-bit rate
