"""lower() artifacts: save/load round trip, StableHLO contract, and clear errors for bad input."""

import pytest
import torch
import torch.nn as nn

from torchneuron.programs.lowered import Lowered, load_lowered, lower
from torchneuron.lowering.errors import DynamicShapeError, LoweringError


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3)).eval()


def test_save_load_round_trip(tmp_path):
    model, x = _model(), torch.randn(4, 6)
    lowered = lower(model, x)
    lowered.save(tmp_path / "art")
    assert sorted(p.name for p in (tmp_path / "art").iterdir()) == ["lowered.json", "module.mlir", "tensors.pt"]
    again = load_lowered(tmp_path / "art")
    assert isinstance(again, Lowered)
    assert again.stablehlo == lowered.stablehlo
    assert again.param_names == lowered.param_names
    with torch.no_grad():
        torch.testing.assert_close(again(x), model(x))


def test_save_load_keeps_output_structure_and_constants(tmp_path):
    table = torch.arange(12.0).reshape(3, 4)  # captured constant: becomes an argument, saved with the artifact

    def f(x, scale: float = 2.0):
        return {"y": (x @ table) * scale, "none": None, "n": 7}

    x = torch.randn(2, 3)
    lowered = lower(f, x)
    assert "dense_resource" not in lowered.stablehlo
    assert "11.0" not in lowered.stablehlo and "1.100000e+01" not in lowered.stablehlo  # table not inlined
    lowered.save(tmp_path / "f")
    out = load_lowered(tmp_path / "f")(x)
    assert set(out) == {"y", "none", "n"} and out["none"] is None and out["n"] == 7
    torch.testing.assert_close(out["y"], f(x)["y"])


def test_stablehlo_is_deterministic_and_location_free():
    x = torch.randn(4, 6)
    a, b = lower(_model(), x).stablehlo, lower(_model(), x).stablehlo
    assert a == b
    assert "loc(" not in a and "func.func @main" in a


def test_wrong_shape_at_call_is_a_clear_error():
    lowered = lower(_model(), torch.randn(4, 6))
    with pytest.raises(ValueError,
                       match=r"input 0 on cpu is float32\[5, 6\].*lowered for float32\[4, 6\].*static-shape"):
        lowered(torch.randn(5, 6))


def test_dynamic_shapes_are_refused_with_a_clear_error():
    from torch.fx.experimental.proxy_tensor import make_fx

    from torchneuron.lowering import passes

    gm = make_fx(lambda x: x * 2, tracing_mode="symbolic")(torch.randn(3, 4))
    with pytest.raises(DynamicShapeError, match="dynamic shapes.*static-shape"):
        passes.check_static_shapes(gm, passes.Prepared())


def test_data_dependent_shapes_are_refused_with_a_clear_error():
    with pytest.raises(LoweringError, match="static-shape"):
        lower(lambda x: x[x > 0], torch.randn(8))


def test_load_rejects_a_directory_that_is_not_an_artifact(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a saved Lowered artifact"):
        load_lowered(tmp_path)


def test_lower_rejects_non_callables():
    with pytest.raises(TypeError, match="function or nn.Module"):
        lower(42, torch.randn(2))
