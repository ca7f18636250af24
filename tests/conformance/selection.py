"""Which OpInfos and dtypes the conformance suite runs: everything on demand, a representative subset in CI."""

from __future__ import annotations

import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import OpInfo

from tests.conformance import harness

# One or more ops per family a training or inference script touches: pointwise math and activations,
# comparisons and logic, reductions, matmuls, normalisation, losses, attention, pooling, indexing and
# scatter/gather, shape ops, concatenation, sorting, random ops, factories. Chosen so the CI run takes
# about two minutes on two cores; `report.py --full` runs all of op_db.
CI_OPS = (
    "add", "sub", "mul", "div.no_rounding_mode", "pow", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh",
    "abs", "neg", "clamp", "where", "lerp", "addcmul",
    "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu", "nn.functional.softplus",
    "eq", "lt", "maximum", "logical_not", "bitwise_and", "isnan",
    "sum", "mean", "amax", "argmax", "var", "cumsum", "prod", "any", "norm",
    "softmax", "log_softmax", "logsumexp",
    "mm", "bmm", "matmul", "addmm", "nn.functional.linear", "einsum",
    "nn.functional.layer_norm", "nn.functional.batch_norm", "nn.functional.group_norm",
    "nn.functional.cross_entropy", "nn.functional.nll_loss", "nn.functional.mse_loss",
    "nn.functional.binary_cross_entropy_with_logits",
    "nn.functional.scaled_dot_product_attention", "nn.functional.dropout", "nn.functional.embedding",
    "nn.functional.max_pool2d", "nn.functional.avg_pool2d", "nn.functional.pad.constant", "nn.functional.pad.reflect",
    "nn.functional.interpolate.bilinear",
    "index_select", "gather", "scatter", "scatter_add", "index_put", "index_add", "masked_fill", "masked_select",
    "take_along_dim", "nonzero",
    "cat", "stack", "transpose", "reshape", "permute", "expand", "flip", "roll", "tril", "repeat", "split",
    "topk", "sort", "unique", "clone", "contiguous",
    "bernoulli", "randn_like", "full", "zeros_like", "arange", "linspace",
)
CI_DTYPES = (torch.float32, torch.bfloat16)
ALL_DTYPES = (
    torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.int32, torch.int16,
    torch.int8, torch.uint8, torch.bool, torch.complex64,
)


def ops(full: bool, names: list[str] | None = None) -> list[OpInfo]:
    """op_db entries: the named ones, all of them (full), or the CI subset."""
    if names:
        wanted = set(names)
        chosen = [op for op in op_db if harness.op_key(op) in wanted or op.name in wanted]
        missing = wanted - {harness.op_key(op) for op in chosen} - {op.name for op in chosen}
        if missing:
            raise SystemExit(f"not in op_db: {sorted(missing)}")
        return chosen
    if full:
        return list(op_db)
    wanted = set(CI_OPS)
    chosen = [op for op in op_db if harness.op_key(op) in wanted]
    missing = wanted - {harness.op_key(op) for op in chosen}
    assert not missing, f"CI_OPS names not in op_db (renamed in this torch?): {sorted(missing)}"
    return chosen
