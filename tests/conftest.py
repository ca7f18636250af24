"""Shared test setup: the neuron device is registered before any test module imports torch state."""

import warnings

import pytest
import torch

import torchneuron  # noqa: F401  (registers the device even when autoload is off)


@pytest.fixture(autouse=True)
def _quiet_fallback_warnings():
    # Coverage warnings are tested where they matter (tests/lowering); elsewhere they are noise.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*has no StableHLO lowering.*")
        yield


@pytest.fixture
def neuron() -> torch.device:
    return torch.device("neuron:0")
