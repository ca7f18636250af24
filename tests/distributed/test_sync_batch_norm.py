"""nn.SyncBatchNorm under DDP on neuron (torchneuron/distributed/sync_batch_norm.py), against BatchNorm on the
whole batch on the CPU; the neuron group's name() and its Works' sequence numbers."""

from .launch import torchrun


def test_sync_batch_norm_and_group_identity(tmp_path):
    reports = torchrun("sync_batch_norm.py", 2, tmp_path)
    for r in reports:
        assert not r["failed"], "\n".join(r["failed"].values())
        assert r["passed"] == ["ddp sync batch norm", "uneven shards", "bf16 statistics",
                               "name and sequence numbers"]
        assert r["values"]["ddp sync batch norm"] < 1e-4 and r["values"]["uneven shards"] < 1e-4
    groups = [r["values"]["name and sequence numbers"] for r in reports]
    assert all(g["name"] == "neuron" for g in groups)
    assert groups[0]["seqs"] == groups[1]["seqs"]  # the same collective, the same number on every rank


def test_the_kernels_in_one_process_match_batch_norm():
    """Two 'ranks' simulated in one process: per-shard stats, the merge (both forms), normalisation and the
    backward kernels against autograd of BatchNorm on the whole batch (CPU)."""
    import torch

    g = torch.Generator().manual_seed(0)
    x = (torch.randn(6, 3, 4, generator=g) * 2 + 1).requires_grad_()
    w, b = torch.rand(3, generator=g) + 0.5, torch.randn(3, generator=g)
    eps = 1e-5
    ref = torch.nn.functional.batch_norm(x, None, None, w, b, training=True, eps=eps)
    dy = torch.randn(ref.shape, generator=g)
    ref.backward(dy)
    dev = lambda t: t.detach().to("neuron")  # noqa: E731
    shards = [dev(x[:3]), dev(x[3:])]
    stats = [torch.batch_norm_stats(s, eps) for s in shards]
    means, invstds = torch.stack([m for m, _ in stats]), torch.stack([i for _, i in stats])
    rm, rv = torch.zeros(3, device="neuron"), torch.ones(3, device="neuron")
    mean, invstd = torch.batch_norm_gather_stats_with_counts(shards[0], means, invstds, rm, rv, 0.1, eps,
                                                             torch.tensor([12.0, 12.0], device="neuron"))
    mean2, invstd2 = torch.batch_norm_gather_stats(shards[0], means, invstds, None, None, 0.1, eps, 12)
    torch.testing.assert_close(mean2.cpu(), mean.cpu())
    torch.testing.assert_close(invstd2.cpu(), invstd.cpu())
    torch.testing.assert_close(rm.cpu(), 0.1 * x.detach().mean((0, 2)))
    torch.testing.assert_close(rv.cpu(), 0.9 + 0.1 * x.detach().var((0, 2), unbiased=True))
    outs = [torch.batch_norm_elemt(s, dev(w), dev(b), mean, invstd, eps) for s in shards]
    torch.testing.assert_close(torch.cat(outs).cpu(), ref.detach(), atol=1e-5, rtol=1e-5)
    reduced = [torch.batch_norm_backward_reduce(dev(d), s, mean, invstd, dev(w), True, True, True)
               for d, s in zip((dy[:3], dy[3:]), shards)]
    sum_dy = reduced[0][0] + reduced[1][0]
    sum_dy_xmu = reduced[0][1] + reduced[1][1]
    x_hat = (ref.detach() - b[:, None]) / w[:, None]
    torch.testing.assert_close((reduced[0][2] + reduced[1][2]).cpu(), (dy * x_hat).sum((0, 2)), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close((reduced[0][3] + reduced[1][3]).cpu(), dy.sum((0, 2)), atol=1e-5, rtol=1e-5)
    count = torch.tensor([12, 12], dtype=torch.int32, device="neuron")
    grads = [torch.batch_norm_backward_elemt(dev(d), s, mean, invstd, dev(w), sum_dy, sum_dy_xmu, count)
             for d, s in zip((dy[:3], dy[3:]), shards)]
    torch.testing.assert_close(torch.cat(grads).cpu(), x.grad, atol=1e-5, rtol=1e-5)
