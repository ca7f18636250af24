"""Complex results whose conjugate bit is part of the value, and generic kernels that call a CPU stub."""

import torch


def _c(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=torch.complex64, generator=g)


def test_conj_physical_in_place():
    """Its only kernel is generic and calls a CPU DispatchStub itself: it used to hit PyTorch's internal
    assert "DispatchStub: missing kernel for neuron"."""
    z = _c(3, 4)
    n = z.to("neuron")
    assert n.conj_physical_() is n
    assert torch.equal(n.cpu(), z.conj_physical())


def test_svd_out_complex():
    z = _c(4, 3)
    outs = (torch.empty(0, dtype=torch.complex64, device="neuron"), torch.empty(0, device="neuron"),
            torch.empty(0, dtype=torch.complex64, device="neuron"))
    torch.svd(z.to("neuron"), out=outs)
    expected = torch.svd(z)
    for got, exp in zip(outs, expected):
        torch.testing.assert_close(got.cpu(), exp)


def test_lu_solve_out_right_side_keeps_the_conjugate_bit():
    """left=False solves A^H X^H = B^H and hands back X^H as a conjugate view of out: the bit the kernel sets
    on its out= alias must reach the neuron tensor, or every value comes back conjugated."""
    LU, piv = torch.linalg.lu_factor(_c(3, 3))
    B = _c(4, 3, seed=1)
    expected = torch.linalg.lu_solve(LU, piv, B, left=False)
    out = torch.empty(0, dtype=torch.complex64, device="neuron")
    torch.linalg.lu_solve(LU.to("neuron"), piv.to("neuron"), B.to("neuron"), left=False, out=out)
    assert out.is_conj() == expected.is_conj()
    torch.testing.assert_close(out.cpu(), expected)
