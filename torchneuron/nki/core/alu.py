"""The engines' operators: ALU ops (binary, reducible), activation functions (unary), both in fp32.

Kernels name an operator with an `nl` function (`nl.add`, `nl.exp`) or a NumPy one (`np.add`, `np.amax`);
`op_name` maps either to one canonical name so every instruction has one table to look in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ERR_INVALID_ARG, fail

F32 = np.float32


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 in float64 then rounded: |error| < 1.5e-7, below fp32 resolution near 1.
    x64 = x.astype(np.float64)
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x64))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    y = 1.0 - poly * np.exp(-x64 * x64)
    return (np.sign(x64) * y).astype(F32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(F32)


_SQRT_2_OVER_PI = np.float32(0.7978845608028654)
_INV_SQRT2 = np.float32(0.7071067811865476)
_INV_SQRT_2PI = np.float32(0.3989422804014327)


def _gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + _erf(x * _INV_SQRT2))).astype(F32, copy=False)


def _gelu_dx(x: np.ndarray) -> np.ndarray:
    return (0.5 * (1.0 + _erf(x * _INV_SQRT2)) + x * _INV_SQRT_2PI * np.exp(-0.5 * x * x)).astype(F32, copy=False)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)))).astype(F32, copy=False)


def _gelu_sigmoid_dx(x: np.ndarray) -> np.ndarray:
    s = _sigmoid(F32(1.702) * x)
    return (s * (1 + F32(1.702) * x * (1 - s))).astype(F32, copy=False)


def _silu_dx(x: np.ndarray) -> np.ndarray:
    s = _sigmoid(x)
    return (s * (1.0 + x * (1.0 - s))).astype(F32, copy=False)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(np.float32(0), x).astype(F32, copy=False)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return (1.0 / np.sqrt(x)).astype(F32, copy=False)


def _reciprocal(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return (np.float32(1) / x).astype(F32, copy=False)


def _log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x)


def _sqrt(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.sqrt(x)


UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "copy": lambda x: x, "bypass": lambda x: x, "identity": lambda x: x,
    "abs": np.abs, "square": np.square, "exp": np.exp, "log": _log, "sqrt": _sqrt, "rsqrt": _rsqrt,
    "reciprocal": _reciprocal, "negative": np.negative, "sign": np.sign, "ceil": np.ceil, "floor": np.floor,
    "trunc": np.trunc, "sin": np.sin, "cos": np.cos, "tan": np.tan, "arctan": np.arctan, "tanh": np.tanh,
    "sigmoid": _sigmoid, "relu": lambda x: np.maximum(x, F32(0)), "gelu": _gelu, "gelu_dx": _gelu_dx,
    "gelu_apprx_tanh": _gelu_tanh,
    "gelu_apprx_sigmoid": lambda x: (x * _sigmoid(F32(1.702) * x)).astype(F32, copy=False),
    "gelu_apprx_sigmoid_dx": lambda x: _gelu_sigmoid_dx(x),
    "silu": lambda x: (x * _sigmoid(x)).astype(F32, copy=False), "silu_dx": _silu_dx, "softplus": _softplus,
    "mish": lambda x: (x * np.tanh(_softplus(x))).astype(F32, copy=False), "erf": _erf,
    "erf_dx": lambda x: (2.0 / np.sqrt(np.pi) * np.exp(-x * x)).astype(F32, copy=False),
    "logical_not": lambda x: (x == 0).astype(F32),
}


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(a, b)


def _fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(a, b)


def _mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.mod(a, b)


def _cmp(fn: Callable[[Any, Any], np.ndarray]) -> Callable[[Any, Any], np.ndarray]:
    return lambda a, b: fn(a, b).astype(F32)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return np.power(a, b)


BINARY: dict[str, Callable[[Any, Any], np.ndarray]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": _divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": _power, "fmod": _fmod, "mod": _mod,
    "abs_max": lambda a, b: np.maximum(np.abs(a), np.abs(b)), "abs_min": lambda a, b: np.minimum(np.abs(a), np.abs(b)),
    "equal": _cmp(np.equal), "not_equal": _cmp(np.not_equal), "less": _cmp(np.less),
    "less_equal": _cmp(np.less_equal), "greater": _cmp(np.greater), "greater_equal": _cmp(np.greater_equal),
    "logical_and": _cmp(lambda a, b: (a != 0) & (b != 0)), "logical_or": _cmp(lambda a, b: (a != 0) | (b != 0)),
    "logical_xor": _cmp(lambda a, b: (a != 0) ^ (b != 0)),
    "bypass": lambda a, b: a + np.zeros_like(b), "average": lambda a, b: (a + b) * F32(0.5),
    "prelu": lambda a, b: np.where(a > 0, a, a * b),
    "rsqrt": lambda a, b: _rsqrt(a) + np.zeros_like(b), "reciprocal": lambda a, b: _reciprocal(a) + np.zeros_like(b),
    "abs": lambda a, b: np.abs(a) + np.zeros_like(b),
}

# Bit-vector ops see the integer bits; they run on integer arrays, not fp32.
BITVEC: dict[str, Callable[[Any, Any], np.ndarray]] = {
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift, "right_shift": np.right_shift,
    "invert": lambda a, b: np.invert(a),
}

# reduce op -> (NumPy reduction, identity)
REDUCE: dict[str, tuple[Callable[..., np.ndarray], float]] = {
    "add": (np.sum, 0.0), "maximum": (np.max, -np.inf), "minimum": (np.min, np.inf),
    "multiply": (np.prod, 1.0), "subtract": (lambda a, axis, keepdims: _subtract_reduce(a, axis, keepdims), 0.0),
    "logical_and": (lambda a, axis, keepdims: np.all(a != 0, axis=axis, keepdims=keepdims).astype(F32), 1.0),
    "logical_or": (lambda a, axis, keepdims: np.any(a != 0, axis=axis, keepdims=keepdims).astype(F32), 0.0),
    "logical_xor": (lambda a, axis, keepdims: (np.sum(a != 0, axis=axis, keepdims=keepdims) % 2).astype(F32), 0.0),
    "bitwise_and": (lambda a, axis, keepdims: np.bitwise_and.reduce(a, axis=axis, keepdims=keepdims), -1),
    "bitwise_or": (lambda a, axis, keepdims: np.bitwise_or.reduce(a, axis=axis, keepdims=keepdims), 0),
    "bitwise_xor": (lambda a, axis, keepdims: np.bitwise_xor.reduce(a, axis=axis, keepdims=keepdims), 0),
    "abs_max": (lambda a, axis, keepdims: np.max(np.abs(a), axis=axis, keepdims=keepdims), 0.0),
    "abs_min": (lambda a, axis, keepdims: np.min(np.abs(a), axis=axis, keepdims=keepdims), np.inf),
}


# the ufunc reductions np.sum / np.max / np.min / np.prod run for an ndarray, without their Python wrapper
_UFUNC_REDUCE = {"add": np.add.reduce, "maximum": np.maximum.reduce, "minimum": np.minimum.reduce,
                 "multiply": np.multiply.reduce}


def _subtract_reduce(a: np.ndarray, axis: Any, keepdims: bool) -> np.ndarray:
    """x0 - x1 - x2 - ... over the (trailing) reduced axes."""
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    first = np.take(a.reshape(a.shape[: min(axis)] + (-1,)), 0, axis=-1)
    rest = np.sum(a, axis=axis) - first
    out = first - rest
    return np.expand_dims(out, axis) if keepdims else out


_NUMPY_NAMES: dict[Any, str] = {
    np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.divide: "divide",
    np.true_divide: "divide", np.maximum: "maximum", np.minimum: "minimum", np.max: "maximum",
    np.amax: "maximum", np.min: "minimum", np.amin: "minimum", np.power: "power", np.fmod: "fmod",
    np.mod: "mod", np.equal: "equal", np.not_equal: "not_equal", np.less: "less", np.less_equal: "less_equal",
    np.greater: "greater", np.greater_equal: "greater_equal", np.logical_and: "logical_and",
    np.logical_or: "logical_or", np.logical_xor: "logical_xor", np.bitwise_and: "bitwise_and",
    np.bitwise_or: "bitwise_or", np.bitwise_xor: "bitwise_xor", np.left_shift: "left_shift",
    np.right_shift: "right_shift", np.invert: "invert", np.sum: "add", np.prod: "multiply",
    np.abs: "abs", np.absolute: "abs", np.square: "square", np.exp: "exp", np.log: "log", np.sqrt: "sqrt",
    np.negative: "negative", np.sign: "sign", np.ceil: "ceil", np.floor: "floor", np.trunc: "trunc",
    np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arctan: "arctan", np.tanh: "tanh",
    np.reciprocal: "reciprocal", np.logical_not: "logical_not", np.copy: "copy",
}


def op_name(op: Any, what: str = "op") -> str:
    """Canonical name of an operator given as an nl function, a NumPy function, or a name."""
    name = getattr(op, "_nki_op", None)
    if name is None and isinstance(op, str):
        name = op
    if name is None:
        try:
            name = _NUMPY_NAMES.get(op)
        except TypeError:
            name = None
    if name is None:
        raise fail(ERR_INVALID_ARG, f"{what}={op!r} is not an NKI operator.",
                   "pass an nl operator such as nl.add / nl.exp (NumPy equivalents like np.add also work).")
    return name


# Engines produce inf/NaN silently: a kernel runs inside `np.errstate(**ENGINE_ERRORS)` (the launch sets it
# once, instead of every instruction entering its own errstate).
ENGINE_ERRORS = {"over": "ignore", "invalid": "ignore", "divide": "ignore", "under": "ignore"}


def binary(op: str, a: Any, b: Any) -> np.ndarray:
    if op in BITVEC:
        return BITVEC[op](np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64))
    if op in BINARY:  # overflow and NaN are values here, not warnings: kernels run under ENGINE_ERRORS
        return np.asarray(BINARY[op](a, b), dtype=F32)
    if op in UNARY:  # activation-style op named in a binary slot: applies to the first operand
        return np.asarray(UNARY[op](np.asarray(a, dtype=F32)), dtype=F32) + np.zeros_like(b, dtype=F32)
    raise fail(ERR_INVALID_ARG, f"{op} is not a binary ALU operator.", "use e.g. nl.add, nl.multiply, nl.maximum.")


def unary(op: str, x: np.ndarray) -> np.ndarray:
    if op not in UNARY:
        raise fail(ERR_INVALID_ARG, f"{op} is not an activation function.", "use e.g. nl.exp, nl.tanh, nl.copy.")
    return np.asarray(UNARY[op](np.asarray(x, dtype=F32)), dtype=F32)


def reduce(op: str, x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    if op not in REDUCE:
        raise fail(ERR_INVALID_ARG, f"{op} cannot reduce.", "reduce with add, maximum, minimum, multiply or a "
                   "logical/bitwise op.")
    fast = _UFUNC_REDUCE.get(op)
    if fast is not None and type(x) is np.ndarray:  # what np.sum / np.max / ... call for an ndarray
        return np.asarray(fast(x, axis=axis, keepdims=keepdims), dtype=F32)
    fn, _ = REDUCE[op]
    if op.startswith("bitwise"):
        return fn(x.astype(np.int64), axis=axis, keepdims=keepdims)
    return np.asarray(fn(x, axis=axis, keepdims=keepdims), dtype=F32)


def is_bitvec(op: str) -> bool:
    return op in BITVEC
