"""docs/nki_ops.md is generated (tools/gen_nki_ops_table.py) and current."""

from __future__ import annotations

from pathlib import Path

import pytest

from nki_ops import estimates

DOC = Path(__file__).resolve().parents[2] / "docs" / "nki_ops.md"


def test_the_page_was_generated_from_the_current_kernels_and_cost_model():
    text = DOC.read_text()
    assert estimates.current_fingerprint_in(text) == estimates.fingerprint(), \
        "docs/nki_ops.md is stale: run python tools/gen_nki_ops_table.py"


def test_every_registered_op_has_a_row():
    import nki_ops.torch_ops  # noqa: F401
    from torchneuron.custom_ops import registry

    text = DOC.read_text()
    for name in registry.names():
        if name.startswith("nki_ops::"):
            assert f"| `{name.split('::')[1]}` |" in text, name


@pytest.mark.slow
def test_regenerating_gives_the_same_page(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    assert estimates.markdown() == DOC.read_text()
