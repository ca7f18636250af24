"""torch.nn's fused, batch-chunked linear + cross-entropy."""

from __future__ import annotations

import torch

from ..decomp_common import arange, zeros
from ._common import _acc_dtype, _cast

aten = torch.ops.aten


def _linear_ce_rows(input, linear_weight, target, linear_bias, weight, ignore_index, acc_dtype):
    """Logits, per-row class weights (0 where the target is ignored) and per-row losses of the fused
    linear + cross-entropy, in the accumulation dtype."""
    acc = acc_dtype if acc_dtype is not None and acc_dtype.itemsize > _acc_dtype(input.dtype).itemsize \
        else _acc_dtype(input.dtype)
    logits = aten.mm.default(_cast(input, acc), aten.t.default(_cast(linear_weight, acc)))
    if linear_bias is not None:
        logits = aten.add.Tensor(logits, _cast(linear_bias, acc))
    ignored = aten.eq.Scalar(target, ignore_index)
    safe = aten.where.self(ignored, aten.zeros_like.default(target), target)  # ignore_index may be out of range
    keep = _cast(aten.logical_not.default(ignored), acc)
    row_w = keep if weight is None else aten.mul.Tensor(keep, aten.index_select.default(_cast(weight, acc), 0, safe))
    lse = aten.logsumexp.default(logits, [1])
    picked = aten.squeeze.dim(aten.gather.default(logits, 1, aten.unsqueeze.default(safe, 1)), 1)
    loss = aten.mul.Tensor(row_w, aten.sub.Tensor(lse, picked))
    return logits, safe, row_w, lse, loss


def _linear_cross_entropy_chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                                  label_smoothing, batch_chunk_size, acc_policy, acc_dtype, allow_retain_graph,
                                  compute_input_grad, compute_linear_weight_grad, compute_linear_bias_grad):
    """torch.nn's batch-chunked fused linear + cross-entropy (mean/sum): the chunking is a memory schedule,
    so one unchunked linear + log-softmax gives the same loss; the gradients it precomputes in forward are
    the closed form (softmax - onehot) scaled per row, pushed through the linear layer."""
    if label_smoothing > 0.0:
        return NotImplemented  # the op itself rejects it
    logits, safe, row_w, lse, loss = _linear_ce_rows(input, linear_weight, target, linear_bias, weight,
                                                     ignore_index, acc_dtype)
    total = aten.sum.default(loss)
    scale = row_w
    if reduction == "mean":
        denom = aten.sum.default(row_w)
        total = aten.div.Tensor(total, denom)  # 0/0 = NaN, as the op's "d == 0 -> nan"
        scale = aten.div.Tensor(row_w, denom)
    dt = input.dtype
    if compute_input_grad or compute_linear_weight_grad or compute_linear_bias_grad:
        prob = aten.exp.default(aten.sub.Tensor(logits, aten.unsqueeze.default(lse, 1)))
        onehot = _cast(aten.eq.Tensor(aten.unsqueeze.default(arange(logits.shape[1], logits.device), 0),
                                      aten.unsqueeze.default(safe, 1)), logits.dtype)
        g = aten.mul.Tensor(aten.sub.Tensor(prob, onehot), aten.unsqueeze.default(scale, 1))  # dloss/dlogits
    grad_input = _cast(aten.mm.default(g, _cast(linear_weight, g.dtype)), dt) if compute_input_grad \
        else zeros([0, 0], dt, input.device)
    grad_lw = _cast(aten.mm.default(aten.t.default(g), _cast(input, g.dtype)), dt) if compute_linear_weight_grad \
        else zeros([0, 0], dt, input.device)
    grad_lb = _cast(aten.sum.dim_IntList(g, [0]), dt) if compute_linear_bias_grad \
        else zeros([0], dt, input.device)
    return _cast(total, dt), grad_input, grad_lw, grad_lb


def _linear_cross_entropy_chunked_none(input, linear_weight, target, linear_bias, weight, ignore_index,
                                       batch_chunk_size, acc_policy, acc_dtype):
    """reduction='none' form: the per-row losses (0 for ignored targets)."""
    loss = _linear_ce_rows(input, linear_weight, target, linear_bias, weight, ignore_index, acc_dtype)[-1]
    return _cast(loss, input.dtype)


def _linear_cross_entropy_ops() -> dict:
    try:
        import torch.nn.modules.linear_cross_entropy  # noqa: F401  (registers the torch_nn custom ops)
        ops = torch.ops.torch_nn
        return {ops._linear_cross_entropy_batch_chunked.default: _linear_cross_entropy_chunked,
                ops._linear_cross_entropy_batch_chunked_no_reduction.default: _linear_cross_entropy_chunked_none}
    except (ImportError, AttributeError):  # a PyTorch without the fused op
        return {}
