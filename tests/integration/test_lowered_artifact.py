"""A saved Lowered artifact (torchneuron.load_lowered) runs on the device of its inputs: it owns its
parameters and places them there itself, or where .to() says."""

import pytest
import torch
from torch import nn

import torchneuron


def _artifact(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5)).eval()
    x = torch.randn(2, 3, 8, 8)
    torchneuron.lower(model, x).save(tmp_path / "art")
    with torch.no_grad():
        return model(x), x


def test_loaded_artifact_runs_on_neuron_inputs(tmp_path):
    expected, x = _artifact(tmp_path)
    loaded = torchneuron.load_lowered(tmp_path / "art")
    for _ in range(2):  # parameters move once, then stay
        out = loaded(x.to("neuron"))
        assert out.device == torch.device("neuron:0")
        torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(loaded(x), expected, rtol=1e-5, atol=1e-5)  # and still on cpu inputs
    out1 = loaded(x.to("neuron:1"))
    assert out1.device == torch.device("neuron:1")


def test_to_places_the_parameters(tmp_path):
    expected, x = _artifact(tmp_path)
    loaded = torchneuron.load_lowered(tmp_path / "art").to("neuron")
    assert loaded is not None and all(p.device == torch.device("neuron:0") for p in loaded._current_params())
    torch.testing.assert_close(loaded(x.to("neuron")).cpu(), expected, rtol=1e-5, atol=1e-5)


def test_a_lowered_live_module_still_asks_for_the_module_to_move(tmp_path):
    """A Lowered of a live module reads the module's parameters: those are the user's to move."""
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    lowered = torchneuron.lower(model, torch.randn(3, 4))
    with pytest.raises(RuntimeError, match=r"parameter 'weight' is on cpu but the inputs are on neuron:0.*\.to"):
        lowered(torch.randn(3, 4, device="neuron"))
    lowered.to("neuron")
    assert model.weight.device.type == "neuron"
    assert lowered(torch.randn(3, 4, device="neuron")).device.type == "neuron"
