"""Shared settings for the NKI simulator tests: bounded hypothesis runs and a pinned target."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from torchneuron import targets

settings.register_profile("nki", max_examples=15, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("nki")


@pytest.fixture(autouse=True)
def _trn2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs on trn2 unless it says otherwise (the environment must not leak in)."""
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    monkeypatch.setattr(targets, "current", lambda: targets.named("trn2"))
