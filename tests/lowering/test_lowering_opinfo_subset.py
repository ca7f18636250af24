"""A representative slice of the OpInfo sweep (tools/gen_op_coverage.py) in CI: each op's samples run with
every ATen op they execute going through single-op lowering + XLA:CPU, compared with CPU eager."""

import pytest

from tests.helpers import assert_opinfo_lowers
from torchneuron.testing.opinfo_sweep import check_opinfo

FAST = ["add", "mul", "sin", "exp", "where", "clamp", "sum", "mean", "amax", "softmax", "log_softmax",
        "matmul", "nn.functional.linear", "nn.functional.layer_norm", "nn.functional.gelu", "nn.functional.relu",
        "cat", "transpose", "index_select", "cumsum"]
SLOW = ["nn.functional.conv2d", "nn.functional.adaptive_avg_pool2d", "nn.functional.embedding", "topk", "sort",
        "nn.functional.cross_entropy", "nn.functional.scaled_dot_product_attention", "gather", "bmm", "var"]


def _check(name, dtype):
    assert_opinfo_lowers(name, dtype)


@pytest.mark.parametrize("name", FAST)
def test_opinfo_float32(name):
    _check(name, "float32")


@pytest.mark.parametrize("name", ["add", "softmax", "matmul", "nn.functional.layer_norm"])
def test_opinfo_bfloat16(name):
    _check(name, "bfloat16")


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_opinfo_float32_slow(name):
    _check(name, "float32")


def test_a_missing_lowering_is_reported_with_its_op():
    res = check_opinfo("nonzero", "float32", max_samples=1)
    assert res["status"] == "missing"
    assert any(e[0] == "aten::nonzero" and "static-shape" in e[2] for e in res["events"])
