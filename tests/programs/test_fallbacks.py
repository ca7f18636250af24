"""Fallbacks: an op without a StableHLO lowering is recorded for fallback_ops(), warned about or refused
by the op policy, as the coverage table says."""

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from torchneuron.lowering import op_table
from torchneuron.programs import fallbacks

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh():
    # fallback_ops() also reads the process-wide executed-op counts, which earlier tests filled.
    import torchneuron

    torchneuron.reset_executed_ops()
    fallbacks._reset_for_tests()
    yield
    fallbacks._reset_for_tests()


@pytest.fixture
def table(monkeypatch):
    monkeypatch.setattr(op_table, "OVERLOADS", {"aten::sin": "lowered", "aten::topk": "mismatch",
                                                 "aten::nonzero": "missing"})
    monkeypatch.setattr(op_table, "CAUSES", {"aten::nonzero": "data-dependent output shape"})
    monkeypatch.setattr(op_table, "RUNTIME", frozenset({"aten::view"}))


def test_lowered_mismatched_and_runtime_ops_are_allowed_silently(table):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for op in ("aten::sin", "aten::topk", "aten::view"):
            assert fallbacks.policy(op) is None
    assert fallbacks.fallback_ops() == []


def test_missing_op_warns_once_and_is_listed(table, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_FALLBACK", "warn")
    with pytest.warns(fallbacks.FallbackWarning, match="aten::nonzero has no StableHLO lowering.*data-dependent"):
        assert fallbacks.policy("aten::nonzero") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fallbacks.report_fallback("aten::nonzero", "again")  # second time: silent
    assert fallbacks.fallback_ops() == ["aten::nonzero"]


def test_error_mode_refuses_with_the_op_and_the_fix(table, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_FALLBACK", "error")
    msg = fallbacks.policy("aten::nonzero")
    assert "aten::nonzero" in msg and "fall back to the CPU" in msg and "TORCHNEURON_FALLBACK=warn" in msg


def test_ops_missing_from_the_table_count_as_fallbacks(table, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_FALLBACK", "error")
    assert "not in the coverage table" in fallbacks.policy("aten::made_up_op")


def test_fallbacks_import_is_cheap():
    """torchneuron/__init__ installs the policy at import: no torch-mlir or jax may be imported for it."""
    code = ("import sys; import torchneuron.programs.fallbacks as f; f.policy('aten::sin'); "
            "bad = [m for m in ('torch_mlir', 'jax', 'jaxlib') if m in sys.modules]; print(bad); "
            "sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


_TRAINING_STEP = """
import sys, warnings
sys.path.insert(0, {root!r})
import torch, torch.nn.functional as F
from torchneuron.programs.fallbacks import FallbackWarning
from torchneuron.testing.models import GPT, MLP
warnings.simplefilter("error", category=FallbackWarning)
torch.manual_seed(0)
for model, x, y in [(MLP(d_in=16, hidden=32, classes=4), torch.randn(8, 16), torch.randint(0, 4, (8,))),
                    (GPT(vocab=32, d=16, heads=2, layers=1, ctx=8), torch.randint(0, 32, (2, 8)), None)]:
    model = model.to("neuron")
    opt = torch.optim.AdamW(model.parameters())
    x = x.to("neuron")
    if y is None:
        _, loss = model(x, x)
    else:
        loss = F.cross_entropy(model(x), y.to("neuron"))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
import torchneuron
print(torchneuron.fallback_ops())
"""


def test_a_training_step_runs_no_op_unknown_to_the_table():
    """The sweep records each op's backward too (gelu_backward, the fused attention backward, ...): a
    default-eager training step of the MLP and the GPT-style model warns about nothing and lists no
    fallback (they used to warn about nine backward ops that do lower)."""
    out = subprocess.run([sys.executable, "-c", _TRAINING_STEP.format(root=str(ROOT))], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
