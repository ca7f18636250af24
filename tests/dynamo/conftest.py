import warnings

import pytest
import torch

import torchneuron  # noqa: F401


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch: no graph reused from another test's Dynamo cache."""
    import torch._dynamo

    torch._dynamo.reset()
    torch.neuron.reset_dynamo_metrics()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*has no StableHLO lowering.*")
        yield
    torch._dynamo.reset()


def assert_same(a, b, rtol=2e-5, atol=2e-6):
    """Compiled vs eager on neuron: XLA:CPU may fuse and reorder float math, so equal within float32 rounding."""
    torch.testing.assert_close(a.detach().cpu(), b.detach().cpu(), rtol=rtol, atol=atol)
