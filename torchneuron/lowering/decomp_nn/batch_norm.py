"""BatchNorm's ``_batch_norm_with_update`` family as ``native_batch_norm`` (what torch-mlir lowers), with the
empty reserve buffer made explicit."""

from __future__ import annotations

import torch

from ..decomp_common import zeros

aten = torch.ops.aten


def _batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    out, mean, rstd = aten.native_batch_norm.default(input, weight, bias, running_mean, running_var, True, momentum,
                                                     eps)
    return out, mean, rstd, zeros([0], torch.int32)


def _batch_norm_no_update(input, weight, bias, running_mean, running_var, momentum, eps):
    out, mean, rstd = aten.native_batch_norm.default(input, weight, bias, running_mean, running_var, False, momentum,
                                                     eps)
    return out, mean, rstd, zeros([0], torch.int32)


def _batch_norm_with_update_functional(input, weight, bias, running_mean, running_var, momentum, eps):
    """What functionalization turns ``_batch_norm_with_update`` (training BatchNorm) into; the running
    statistics come back as outputs and are written into the module's buffers by the caller."""
    out, mean, rstd, new_mean, new_var = aten._native_batch_norm_legit_functional.default(
        input, weight, bias, running_mean, running_var, True, momentum, eps)
    # the (empty) reserve buffer: int32 because torch-mlir cannot materialise unsigned constants; eager casts
    # it back to the schema's uint8 on the host
    return out, mean, rstd, zeros([0], torch.int32), new_mean, new_var
