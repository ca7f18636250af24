"""Random-state calls inside a compiled function: the neuron device module's RNG entry points are opaque to
Dynamo (a graph break that runs them eagerly, as torch.cuda's are), so saving, restoring and reseeding inside
``torch.compile`` gives eager's draws."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.testing._utils import freeze_rng_state


def _save_restore(x):
    state = torch.neuron.get_rng_state()
    a = F.dropout(x, 0.5)
    torch.neuron.set_rng_state(state)
    b = F.dropout(x, 0.5)
    return a * 2 + 1, b * 2 + 1


def test_save_and_restore_rng_state_inside_compiled_function(neuron):
    x = torch.randn(64, device=neuron)
    torch.manual_seed(5)
    expected = _save_restore(x)
    torch.manual_seed(5)
    got = torch.compile(_save_restore, backend="neuron")(x)
    torch.testing.assert_close(got[0].cpu(), got[1].cpu())  # the restored state drew the same mask
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.cpu(), e.cpu())


def _reseeded(x):
    # what OpInfo's wrapper_set_seed does: get/set the state under no_dispatch, reseed, draw
    with freeze_rng_state():
        torch.manual_seed(42)
        return F.dropout(x, 0.5) + 1


def test_reseed_under_freeze_rng_state_inside_compiled_function(neuron):
    x = torch.randn(64, device=neuron)
    expected = _reseeded(x)
    torch.testing.assert_close(torch.compile(_reseeded, backend="neuron")(x).cpu(), expected.cpu())
    torch.testing.assert_close(torch.compile(_reseeded, backend="neuron")(x).cpu(), expected.cpu())
