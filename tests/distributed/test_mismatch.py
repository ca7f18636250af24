"""Ranks passing different tensors to one collective: PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL reports it, and
without it every rank gets a DistBackendError naming the collective, the shapes and the ranks; no process
aborts (workers/mismatch.py under torchrun, which fails the test if any rank dies)."""

import pytest

from .launch import torchrun

DETAIL = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}


def _run(kind, tmp_path, **env):
    reports = torchrun("mismatch.py", 2, tmp_path, kind, timeout=180, **env)
    for rep in reports:
        assert not rep["failed"], "\n".join(f"{k}:\n{v}" for k, v in rep["failed"].items())
        assert rep["values"]["still works"] == {"all_reduce": [2.0] * 3, "all_gather": [0.0, 0.0, 1.0, 1.0]}
    return reports


@pytest.mark.parametrize("kind", ["size", "dtype"])
def test_debug_detail_reports_the_mismatch_on_every_rank(kind, tmp_path):
    for rep in _run(kind, tmp_path, **DETAIL):
        assert rep["values"]["backend"] == "_ProcessGroupWrapper"
        error = rep["values"]["error"]
        assert error is not None and "Detected mismatch between collectives" in error, error


def test_size_mismatch_raises_dist_backend_error_on_every_rank(tmp_path):
    for rep in _run("size", tmp_path, TORCH_DISTRIBUTED_DEBUG="OFF"):
        error = rep["values"]["error"]
        assert error is not None, rep["values"]
        assert error.startswith("torch.distributed.DistBackendError: "), error
        for part in ("all_reduce", "rank 0: all_reduce of float32[4]", "rank 1: all_reduce of float32[6]"):
            assert part in error, error


def test_dtype_mismatch_raises_dist_backend_error_on_every_rank(tmp_path):
    for rep in _run("dtype", tmp_path, TORCH_DISTRIBUTED_DEBUG="OFF"):
        error = rep["values"]["error"]
        assert error is not None, rep["values"]
        assert error.startswith("torch.distributed.DistBackendError: "), error
        assert "rank 0: all_reduce of float32[4]" in error and "rank 1: all_reduce of int32[4]" in error, error
