"""Host kernels reuse the host aliases of recent storages (csrc/aten/native/HostAlias.cpp: reusableHostAlias).

A reused alias must never carry anything over from its last use: geometry, dtype, lazy conj/neg bits, a
storage a kernel grew or swapped. Each case below changes one of those between two ops on one storage.
"""

import torch


def _both(fn, *tensors):
    """fn on neuron copies and on the CPU tensors; the results must be equal."""
    got = fn(*[t.to("neuron") for t in tensors])
    want = fn(*tensors)
    if isinstance(got, torch.Tensor):
        got, want = (got,), (want,)
    for g, w in zip(got, want):
        assert g.device.type == "neuron" and g.dtype == w.dtype and g.shape == w.shape
        assert torch.equal(g.cpu(), w)


def test_views_of_one_storage_in_one_op_and_in_turn():
    x = torch.arange(24.0).reshape(4, 6)
    _both(lambda a: a + a.t().reshape(4, 6), x)
    _both(lambda a: (a[1:] * 2, a[:, ::2] + 1, a.t() - a.t().contiguous()), x)


def test_same_storage_other_dtype_and_geometry():
    x = torch.arange(8, dtype=torch.int32)
    _both(lambda a: ((a + 1), (a.view(torch.float32) * 0).view(torch.int32), a.view(2, 4).sum(1)), x)


def test_conj_and_neg_bits_do_not_stick():
    z = torch.tensor([1 + 2j, 3 - 1j, -2 + 0.5j])
    _both(lambda a: (a.conj() * 1, a * 1, a.conj()._neg_view() + 0, a + 0), z)


def test_out_that_grows_its_storage_then_reads_it():
    def fn(a):
        out = torch.empty(0, device=a.device)
        torch.add(a, 1, out=out)  # the kernel resizes out: its alias storage is regrown in device memory
        first = out * 2
        torch.mul(a, a, out=out)  # same tensor, now a storage of the right size
        return first, out + 0

    _both(fn, torch.randn(5))


def test_in_place_on_a_view_is_seen_through_the_base():
    def fn(a):
        a = a.clone()
        a[1:3].mul_(10)
        a[:, 0].add_(a[:, 1])
        return a, a.sum()

    _both(fn, torch.randn(4, 3))


def test_set_swaps_the_storage_under_a_tensor():
    def fn(a, b):
        c = a.clone()
        before = c + 1
        c.set_(b.clone())
        return before, c + 1

    _both(fn, torch.randn(6), torch.randn(9))


def test_many_storages_cycle_through_the_cache():
    xs = [torch.full((3,), float(i)) for i in range(20)]  # more than the per-thread cache holds
    _both(lambda *ts: [t * 2 + ts[0] for t in ts], *xs)
