"""Neuron decompositions: pointwise ops torch-mlir lowers wrongly or not at all in some forms (remainder's
sign, comparisons of booleans and of floats with integer literals, constant-folded sign/trunc, Scalar
overloads of the bitwise ops, shifts and fmod, non-broadcasting fmax/fmin, angle of real numbers).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .arith import _broadcasting, _remainder, _scalar_as_tensor
from .compare import _angle, _compare, _sign, _trunc

aten = torch.ops.aten

_SCALAR_AS_TENSOR = (
    (aten.bitwise_and.Scalar, aten.bitwise_and.Tensor),
    (aten.bitwise_or.Scalar, aten.bitwise_or.Tensor),
    (aten.bitwise_xor.Scalar, aten.bitwise_xor.Tensor),
    (aten.bitwise_left_shift.Tensor_Scalar, aten.bitwise_left_shift.Tensor),
    (aten.bitwise_right_shift.Tensor_Scalar, aten.bitwise_right_shift.Tensor),
    (aten.__lshift__.Scalar, aten.bitwise_left_shift.Tensor),
    (aten.__rshift__.Scalar, aten.bitwise_right_shift.Tensor),
    (aten.fmod.Scalar, aten.fmod.Tensor),
)


def table() -> dict[torch._ops.OperatorBase, Callable]:
    t: dict = {
        aten.remainder.Tensor: _remainder,
        aten.remainder.Scalar: _remainder,
        aten.angle.default: _angle,
        aten.sign.default: _sign,
        aten.trunc.default: _trunc,
    }
    for op in (aten.fmax.default, aten.fmin.default):
        t[op] = _broadcasting(op)
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        for ov in ("Tensor", "Scalar"):
            op = getattr(getattr(aten, name), ov)
            t[op] = _compare(op)
    for scalar_op, tensor_op in _SCALAR_AS_TENSOR:
        t[scalar_op] = _scalar_as_tensor(tensor_op)
    return t
