"""The kernel library's torch ops: pinned NKI target, bounded hypothesis runs (more under `-m slow`)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("nki_ops", max_examples=6, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(autouse=True)
def _trn2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    monkeypatch.setenv("TORCHNEURON_TARGET", "trn2")
