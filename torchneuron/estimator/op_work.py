"""What an ATen op asks of a NeuronCore: which engine does its work, how much, and its matmul FLOPs.

Ops are named as the profiler names them (``aten::mm``, overload dropped). Matmul-like ops (mm, addmm, bmm,
baddbmm, convolution, fused attention) run on the Tensor engine; transcendental activations on the Scalar
(Activation) engine; arithmetic, reductions and normalisations on the Vector engine; copies, concatenation,
gathers and scatters are DMA; views and allocations do no device work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.utils import flop_counter

from ..lowering.auto_cast import NONE, AutoCast
from .machine import Machine

TENSOR, VECTOR, SCALAR, DMA, HBM = "Tensor", "Vector", "Scalar", "DMA", "HBM"


@dataclass(frozen=True)
class TensorMeta:
    shape: tuple[int, ...]
    dtype: torch.dtype

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    @staticmethod
    def of(t: torch.Tensor) -> TensorMeta:
        return TensorMeta(tuple(int(s) for s in t.shape), t.dtype)


def base_name(name: str) -> str:
    """``aten::add_.Tensor`` / ``aten.add_.Tensor`` (an FX target) → ``add_``."""
    parts = name.replace("::", ".").split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def op_label(name: str) -> str:
    """``aten.add_.Tensor`` → ``aten::add_``: the name PyTorch's profiler gives the op."""
    parts = name.replace("::", ".").split(".")
    return f"{parts[0]}::{parts[1]}" if len(parts) > 1 else f"aten::{parts[0]}"


_VIEWS = frozenset([
    "view", "_unsafe_view", "reshape", "_reshape_alias", "expand", "expand_as", "permute", "transpose", "t",
    "numpy_T", "slice", "select", "unsqueeze", "squeeze", "as_strided", "alias", "detach", "split",
    "split_with_sizes", "unsafe_split", "chunk", "unbind", "narrow", "view_as", "view_as_real",
    "view_as_complex", "diagonal", "unflatten", "flatten", "movedim", "swapaxes", "swapdims", "unfold",
    "lift_fresh", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "_local_scalar_dense", "resize", "resize_as", "set", "conj", "_conj", "_neg_view", "real", "imag",
    "_unsafe_view_copy", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "_assert_async",
    "_assert_scalar"
])
_GATHERS = frozenset([
    "index", "index_select", "gather", "scatter", "scatter_add", "scatter_reduce", "index_put",
    "_index_put_impl", "index_add", "index_copy", "index_fill", "_unsafe_index", "_unsafe_index_put",
    "_unsafe_masked_index", "embedding", "embedding_dense_backward", "masked_select", "masked_scatter",
    "nonzero", "take", "put"
])
_COPIES = frozenset([
    "clone", "copy", "_copy_from", "_copy_from_and_resize", "_to_copy", "to", "contiguous", "cat", "stack",
    "hstack", "vstack", "concat", "concatenate", "repeat", "repeat_interleave", "tile", "flip", "roll",
    "constant_pad_nd", "pad", "narrow_copy", "slice_scatter", "select_scatter", "diagonal_scatter",
    "as_strided_scatter", "lift_fresh_copy", "_pin_memory"
]) | {n + "_copy" for n in ("view", "permute", "transpose", "t", "expand", "slice", "select",
                                       "unsqueeze", "squeeze", "diagonal", "unfold", "alias", "split",
                                       "as_strided", "detach")}
_ACTIVATIONS = frozenset([
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sigmoid", "tanh", "gelu", "silu", "mish",
    "softplus", "elu", "selu", "celu", "erf", "erfc", "erfinv", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "pow", "logit", "relu", "leaky_relu",
    "hardtanh", "hardsigmoid", "hardswish", "relu6", "softsign", "log_sigmoid_forward", "gelu_backward",
    "silu_backward", "sigmoid_backward", "tanh_backward", "elu_backward", "softplus_backward",
    "log_sigmoid_backward", "mish_backward", "hardswish_backward", "logit_backward"
])
# (Vector passes over the input, Scalar passes): reductions and normalisations read every input element.
_REDUCTIONS: dict[str, tuple[int, int]] = {
    **{n: (1, 0) for n in ("sum", "mean", "amax", "amin", "max", "min", "prod", "argmax", "argmin", "any", "all",
                           "aminmax", "count_nonzero", "nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward",
                           "nll_loss2d_backward")},
    **{n: (2, 0) for n in ("var", "std", "var_mean", "std_mean", "norm", "linalg_vector_norm", "cumsum",
                           "cumprod", "mse_loss", "mse_loss_backward", "_native_batch_norm_legit_no_training")},
    "logsumexp": (2, 1), "_softmax": (3, 1), "_log_softmax": (3, 1), "_softmax_backward_data": (3, 0),
    "_log_softmax_backward_data": (3, 1), "native_layer_norm": (4, 1), "native_layer_norm_backward": (6, 0),
    "native_batch_norm": (4, 1), "_native_batch_norm_legit": (4, 1), "_native_batch_norm_legit_functional": (4, 1),
    "native_batch_norm_backward": (6, 0), "native_group_norm": (4, 1), "native_group_norm_backward": (6, 0),
    "_fused_rms_norm": (3, 1), "_fused_rms_norm_backward": (5, 0), "rms_norm": (3, 1), "topk": (4, 0),
    "sort": (8, 0), "argsort": (8, 0), "kthvalue": (8, 0), "median": (8, 0),
}
_MATMULS = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_scaled_mm", "addbmm"})
_CONVS = frozenset({"convolution", "_convolution", "convolution_overrideable", "_slow_conv2d_forward",
                    "mkldnn_convolution", "cudnn_convolution"})
_CONV_BACKWARDS = frozenset({"convolution_backward", "convolution_backward_overrideable"})
_ATTENTION = frozenset({
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_fused_attention_overrideable",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "scaled_dot_product_attention",
})
# Fused optimizer steps: Vector passes per parameter element (moments, bias correction, update).
_FUSED_OPTIM_PASSES = 8


@dataclass(frozen=True)
class Work:
    """Engine time (ns) an op needs before memory traffic, and its Tensor-engine FLOPs."""
    engines: dict[str, float]
    flops: int = 0
    moves_data: bool = True  # False: a view or an allocation (no device work at all)
    hbm_bytes: int | None = None  # HBM bytes as an eager kernel when not all inputs and outputs (a gather)


def is_view(name: str) -> bool:
    return base_name(name).rstrip("_") in _VIEWS or base_name(name) in _VIEWS


def is_tensor_op(name: str) -> bool:
    """Whether op ``name`` runs on the Tensor (matrix-multiplication) engine."""
    base = base_name(name)
    plain = base.rstrip("_") if base.endswith("_") and not base.startswith("_") else base
    return plain in _MATMULS or plain in _CONVS or plain in _CONV_BACKWARDS or plain in _ATTENTION \
        or (plain.endswith("_backward") and plain[:-len("_backward")] in _ATTENTION)


def is_gather(name: str) -> bool:
    base = base_name(name)
    return base.rstrip("_") in _GATHERS or base in _GATHERS


def gathered_bytes(inputs: list[TensorMeta], outputs: list[TensorMeta]) -> int:
    """Bytes an indexed op moves: what it writes and the indices it reads; a table larger than what is
    gathered from it (an embedding, ``x[idx]``) is read only where indexed."""
    out = sum(t.nbytes for t in outputs)
    ins = sorted(inputs, key=lambda t: -t.nbytes)
    if ins and ins[0].nbytes > out:
        return out + sum(t.nbytes for t in ins[1:]) + out  # rows read + indices + rows written
    return out + sum(t.nbytes for t in ins)


def work(name: str, inputs: list[TensorMeta], outputs: list[TensorMeta], m: Machine,
         flops: int | None = None, cast: AutoCast = NONE) -> Work:
    """The engine work of op ``name`` on ``inputs`` producing ``outputs``; ``flops`` when the caller knows
    them exactly (torch.utils.flop_counter on the traced call), else counted from the shapes. ``cast`` is the
    compiler's auto-cast: the FP32 operands it selects run at the cast type's rate."""
    base = base_name(name)
    plain = base.rstrip("_") if base.endswith("_") and not base.startswith("_") else base
    if plain in _VIEWS or base in _VIEWS:
        return Work({}, 0, moves_data=False)
    if is_tensor_op(name):
        return _tensor_work(plain, inputs, outputs, m, flops, cast)
    if plain in _GATHERS:
        # Indexed access moves small scattered pieces: DMA runs at a fraction of its streaming rate.
        moved = gathered_bytes(inputs, outputs)
        return Work({DMA: moved / m.dma_bytes_per_ns}, hbm_bytes=moved)
    if plain in _COPIES:
        # one transfer: each byte is read once and written once by the queue that carries it
        return Work({DMA: max(sum(t.nbytes for t in outputs), 1) / m.dma_bytes_per_ns})
    dtype = _compute_dtype(inputs, outputs)
    if cast.casts(dtype, on_tensor_engine=False):
        dtype = cast.dtype
    largest_in = max((t.numel for t in inputs), default=0)
    if plain.startswith(("_foreach_", "_fused_")):
        passes = _FUSED_OPTIM_PASSES if plain.startswith("_fused_") else 1
        elems = sum(t.numel for t in inputs)
        return Work({VECTOR: passes * elems / m.vector_rate(dtype)})
    if plain in _REDUCTIONS:
        vec, sca = _REDUCTIONS[plain]
        elems = max(largest_in, 1)
        engines = {VECTOR: vec * elems / m.vector_rate(dtype)}
        if sca:
            engines[SCALAR] = sca * elems / m.scalar_elems_per_ns
        return Work(engines)
    elems = max(sum(t.numel for t in outputs), largest_in, 1)
    if plain in _ACTIVATIONS:
        return Work({SCALAR: elems / m.scalar_elems_per_ns})
    # Arithmetic: one Vector pass per full-size input operand (a two-input op reads 2N, reference nki.md §3).
    operands = sum(1 for t in inputs if t.numel == elems) or 1
    return Work({VECTOR: min(operands, 3) * elems / m.vector_rate(dtype)})


def _compute_dtype(inputs: list[TensorMeta], outputs: list[TensorMeta]) -> torch.dtype:
    for t in (*outputs, *inputs):
        if t.dtype.is_floating_point:
            return t.dtype
    return (outputs or inputs)[0].dtype if (outputs or inputs) else torch.float32


def tensor_engine_ns(batch: int, m_dim: int, k_dim: int, n_dim: int, dtype: torch.dtype, m: Machine) -> float:
    """Systolic-array time of ``batch`` [M,K]x[K,N] products: 128x128 stationary tiles, up to 512 moving
    columns per instruction at one column per cycle, at least min(64, M) cycles per instruction (reference
    nki.md §3), 4x for fp32; the better of the two operand orientations; split over the LNC cores."""
    if min(batch, m_dim, k_dim, n_dim) <= 0:
        return 0.0

    def cycles(stat: int, moving: int) -> int:
        full, rest = divmod(moving, 512)
        per_tile = full * 512 + (max(min(64, min(stat, 128)), rest) if rest else 0)
        return math.ceil(k_dim / 128) * math.ceil(stat / 128) * per_tile

    best = min(cycles(m_dim, n_dim), cycles(n_dim, m_dim))
    fp32_factor = 1 if m.tensor_flops_per_ns(dtype) == m.tensor_bf16_flops_per_ns else 4
    return batch * best * fp32_factor / (m.tensor_ghz * m.lnc)


def _tensor_work(plain: str, inputs: list[TensorMeta], outputs: list[TensorMeta], m: Machine,
                 flops: int | None, cast: AutoCast = NONE) -> Work:
    dtype = _compute_dtype(inputs, outputs)
    if cast.casts(dtype, on_tensor_engine=True):
        dtype = torch.bfloat16 if cast.cast_type == "tf32" else cast.dtype  # tf32 runs at the 16-bit rate
    products = _products(plain, inputs, outputs)
    counted = sum(2 * b * mm * k * n for b, mm, k, n in products)
    total = flops if flops is not None and flops > 0 else counted
    tensor_ns = sum(tensor_engine_ns(b, mm, k, n, dtype, m) for b, mm, k, n in products)
    if counted > 0 and total > counted:
        tensor_ns *= total / counted  # e.g. attention backward: more products than the shapes show
    engines = {TENSOR: tensor_ns}
    # Results accumulate in PSUM (FP32) and are copied out to SBUF by the Vector engine, tile by tile while
    # the Tensor engine works on the next: it binds only for products with a short contraction.
    drained = sum(b * mm * n for b, mm, _, n in products)
    if drained:
        engines[VECTOR] = drained / m.vector_rate(torch.float32)
    if plain in _ATTENTION or plain.endswith("_backward") and plain[:-len("_backward")] in _ATTENTION:
        q, k = inputs[0], inputs[1] if len(inputs) > 1 else inputs[0]
        scores = math.prod(q.shape[:-1]) * (k.shape[-2] if len(k.shape) >= 2 else 1)
        engines[SCALAR] = scores / m.scalar_elems_per_ns         # exp of the scores
        engines[VECTOR] = engines.get(VECTOR, 0.0) + 3 * scores / m.vector_rate(dtype)  # max, sum, rescale
    return Work(engines, int(total))


def _products(plain: str, ins: list[TensorMeta], outs: list[TensorMeta]) -> list[tuple[int, int, int, int]]:
    """The matrix products (batch, M, K, N) an op performs, from its operand shapes."""
    def operand(i: int) -> tuple[int, ...]:
        return ins[min(i, len(ins) - 1)].shape if ins else ()

    if plain in ("mm", "_scaled_mm"):
        a, b = operand(0), operand(1)
        return [(1, a[0], a[1], b[-1])] if len(a) == 2 and len(b) == 2 else []
    if plain in ("addmm",):
        a, b = (operand(1), operand(2)) if len(ins) >= 3 else (operand(0), operand(1))
        return [(1, a[0], a[1], b[-1])] if len(a) == 2 and len(b) == 2 else []
    if plain in ("bmm", "baddbmm", "addbmm"):
        a, b = (operand(1), operand(2)) if plain != "bmm" and len(ins) >= 3 else (operand(0), operand(1))
        return [(a[0], a[1], a[2], b[2])] if len(a) == 3 and len(b) == 3 else []
    if plain in ("matmul", "linear"):
        a, b = operand(0), operand(1)
        if len(a) < 1 or len(b) < 1:
            return []
        k = a[-1]
        n = (b[0] if plain == "linear" else b[-1]) if len(b) >= 2 else 1
        rows = math.prod(a[:-1]) if a[:-1] else 1
        return [(1, rows, k, n)]
    if plain in _CONVS or plain in _CONV_BACKWARDS:
        return _conv_products(plain, ins, outs)
    if plain in _ATTENTION or plain.endswith("_backward"):
        q, k, v = (operand(1), operand(2), operand(3)) if plain.endswith("_backward") else \
            (operand(0), operand(1), operand(2))
        if len(q) < 2 or len(k) < 2 or len(v) < 2:
            return []
        heads = math.prod(q[:-2]) if q[:-2] else 1
        fwd = [(heads, q[-2], q[-1], k[-2]), (heads, q[-2], k[-2], v[-1])]
        return fwd * 2 if plain.endswith("_backward") else fwd
    return []


def _conv_products(plain: str, ins: list[TensorMeta], outs: list[TensorMeta]) -> list[tuple[int, int, int, int]]:
    # Implicit GEMM per group: M = output channels, K = input channels x kernel window, N = output positions.
    if plain in _CONV_BACKWARDS:
        if len(ins) < 3:
            return []
        grad_out, x, w = ins[0], ins[1], ins[2]
        fwd = _conv_gemm(x, w, grad_out.numel)
        return fwd * 2 if fwd else []
    if len(ins) < 2:
        return []
    x, w = ins[0], ins[1]
    out_numel = outs[0].numel if outs else 0
    return _conv_gemm(x, w, out_numel)


def _conv_gemm(x: TensorMeta, w: TensorMeta, out_numel: int) -> list[tuple[int, int, int, int]]:
    if len(w.shape) < 2 or len(x.shape) < 2 or w.shape[0] == 0 or w.shape[1] == 0:
        return []
    groups = max(1, x.shape[1] // w.shape[1])
    c_out = w.shape[0]
    positions = out_numel // c_out if c_out else 0
    k = math.prod(w.shape[1:])
    return [(groups, c_out // groups, k, positions)]


def exact_flops(target, args, kwargs, out) -> int | None:
    """FLOPs from torch.utils.flop_counter for a traced call when it has a formula for the op."""
    packet = getattr(target, "overloadpacket", None)
    formula = flop_counter.flop_registry.get(packet)
    if formula is None:
        name = getattr(packet, "__name__", "")
        if name in ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_fused_attention_overrideable"):
            q, k, v = args[:3]
            return int(flop_counter.sdpa_flop_count(q.shape, k.shape, v.shape))
        if name in ("_scaled_dot_product_flash_attention_for_cpu_backward",
                    "_scaled_dot_product_fused_attention_overrideable_backward"):
            g, q, k, v = args[:4]
            return int(flop_counter.sdpa_backward_flop_count(g.shape, q.shape, k.shape, v.shape))
        return None
    try:
        return int(formula(*args, out_val=out, **kwargs))
    except (TypeError, ValueError, IndexError, AttributeError, RuntimeError):
        # a formula that cannot read this call's arguments: count from the shapes instead
        return None
