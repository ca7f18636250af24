"""docs/module_coverage.md (tools/gen_module_coverage.py over torchneuron.testing.module_sweep) stays true: it
lists every torch.nn module class, its summary agrees with its rows, and re-running classes gives the statuses
it claims (a sample of them in CI, all of them with -m slow)."""

from pathlib import Path

import pytest
import torch

from torchneuron.testing import module_sweep
from torchneuron.testing.module_coverage_doc import parse_doc

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "module_coverage.md").read_text()
CLAIMED = parse_doc(DOC)
SAMPLE = ["Linear", "Conv2d", "BatchNorm2d", "LayerNorm", "GRUCell", "LSTMCell", "Embedding", "EmbeddingBag",
          "LazyLinear", "MaxUnpool2d", "Dropout", "RReLU", "MSELoss", "Softmax", "TransformerDecoder"]


def test_the_doc_lists_every_module_class():
    stale = "docs/module_coverage.md is stale: run tools/gen_module_coverage.py"
    assert list(CLAIMED) == module_sweep.module_classes(), stale


def test_the_summary_agrees_with_the_rows():
    statuses = list(CLAIMED.values())
    swept = sum(s in ("pass", "fail", "known difference") for s in statuses)
    header = f"| {len(statuses)} | {swept} | {statuses.count('pass')} | {statuses.count('known difference')} |"
    assert header in DOC
    assert statuses.count("fail") == 0, [c for c, s in CLAIMED.items() if s == "fail"]
    for name, status in CLAIMED.items():
        if status == "known difference":
            assert name in module_sweep.KNOWN  # and the reason is in its row


@pytest.mark.parametrize("name", SAMPLE)
def test_classes_have_the_status_the_doc_claims(name):
    (result,) = module_sweep.sweep([name])
    assert result.status == CLAIMED[name], result.notes


@pytest.mark.slow
def test_every_class_has_the_status_the_doc_claims():
    got = {r.name: r.status for r in module_sweep.sweep()}
    assert got == CLAIMED


def test_lazy_modules_move_to_neuron_before_their_first_forward():
    """Found by the sweep: converting a lazy module to neuron turned its uninitialized parameters into empty
    ordinary ones, so the first forward failed; they now materialize on neuron like on CUDA."""
    from torch.nn.parameter import UninitializedBuffer, UninitializedParameter

    lin = torch.nn.LazyLinear(3).to("neuron")
    bn = torch.nn.LazyBatchNorm1d().to("neuron")
    assert isinstance(lin.weight, UninitializedParameter) and lin.weight.device.type == "neuron"
    assert isinstance(bn.running_mean, UninitializedBuffer) and bn.running_mean.device.type == "neuron"
    y = lin(torch.randn(2, 5, device="neuron"))
    assert y.shape == (2, 3) and lin.weight.shape == (3, 5) and lin.weight.device.type == "neuron"
    assert bn(torch.randn(4, 6, device="neuron")).device.type == "neuron" and bn.running_mean.shape == (6,)
