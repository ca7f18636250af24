"""The fused AdamW step (`nki_ops::adamw_`, `nki_ops.optim.AdamW`) against torch.optim.AdamW."""

from __future__ import annotations

import copy

import pytest
import torch

from nki_ops.torch_ops import adamw_
from nki_ops.torch_ops.adamw_ops import reference_adamw_
from nki_ops.optim import AdamW


def _state(seed, *shapes):
    g = torch.Generator().manual_seed(seed)
    return [[torch.randn(*s, generator=g).to("neuron") for s in shapes] for _ in range(3)]


def test_one_step_matches_the_reference_for_odd_sizes():
    shapes = [(1,), (127,), (129, 3), (128 * 2100 + 5,)]
    params, grads, avgs = _state(0, *shapes)
    sqs = [t.abs() for t in _state(1, *shapes)[0]]
    ref = [[t.cpu().clone() for t in group] for group in (params, grads, avgs, sqs)]
    ptrs = [p.data_ptr() for p in params]
    adamw_(params, grads, avgs, sqs, 1e-2, 0.9, 0.99, 1e-8, 0.1, 7)
    reference_adamw_(*ref, 1e-2, 0.9, 0.99, 1e-8, 0.1, 7)
    assert [p.data_ptr() for p in params] == ptrs  # in place
    for got, want in zip((params, avgs, sqs), (ref[0], ref[2], ref[3])):
        for g, w in zip(got, want):
            torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-6)


def test_optimizer_trains_like_torch_adamw():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(10, 33), torch.nn.GELU(), torch.nn.Linear(33, 3)).to("neuron")
    twin = copy.deepcopy(model)
    ours = AdamW(model.parameters(), lr=1e-2, weight_decay=0.05)
    theirs = torch.optim.AdamW(twin.parameters(), lr=1e-2, weight_decay=0.05)
    x = torch.randn(16, 10, device="neuron")
    for step in range(5):
        for m, opt in ((model, ours), (twin, theirs)):
            opt.zero_grad()
            m(x).square().mean().backward()
            opt.step()
        for group in (ours.param_groups[0], theirs.param_groups[0]):
            group["lr"] *= 0.9  # a schedule: the kernel takes lr as data
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p.cpu(), q.cpu(), rtol=1e-5, atol=1e-6)
    assert ours.state[next(model.parameters())]["step"].item() == 5


def test_mismatched_lists_are_refused():
    params, grads, avgs = _state(0, (4,), (5,))
    with pytest.raises(ValueError, match="2 params but 1 grads"):
        adamw_(params, grads[:1], avgs, avgs, 1e-3, 0.9, 0.999, 1e-8, 0.0, 1)
