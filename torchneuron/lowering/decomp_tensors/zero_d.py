"""Reductions and scans of 0-d tensors: lowered on the 1-element view (torch-mlir rejects or crashes on 0-d)."""

from __future__ import annotations

from collections.abc import Callable

import torch

aten = torch.ops.aten


# Reductions and scans with a ``dim`` argument. On a 0-d input torch-mlir either rejects them or crashes;
# Neuron lowers them on the 1-element view instead (``x.reshape(1)``, dim 0) and reshapes the results back.
_DIM_OPS = (
    "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "std", "var", "var_mean",
    "std_mean", "logsumexp", "cumsum", "cumprod", "cummax", "cummin", "_softmax", "_log_softmax", "any", "all",
    "linalg_vector_norm", "norm", "topk", "sort", "argsort", "kthvalue", "median", "nanmedian", "mode",
    "nansum", "count_nonzero", "logcumsumexp", "aminmax", "_cummax_helper", "_cummin_helper",
)


def _zero_d_wrapper(op: torch._ops.OpOverload, inner: Callable | None) -> Callable:
    names = [a.name for a in op._schema.arguments]
    kwarg_only = {a.name for a in op._schema.arguments if a.kwarg_only}

    def decomp(*args, **kwargs):
        x = args[0] if args else None
        if not isinstance(x, torch.Tensor) or x.dim() != 0:
            return inner(*args, **kwargs) if inner is not None else NotImplemented
        values = dict(zip(names, args))
        values.update(kwargs)
        values[names[0]] = x.reshape(1)
        d = values.get("dim")
        if isinstance(d, int):
            values["dim"] = 0
        elif isinstance(d, (list, tuple)) and len(d) > 0:
            values["dim"] = [0]
        pos = [values[n] for n in names if n in values and n not in kwarg_only]
        kw = {n: values[n] for n in names if n in values and n in kwarg_only}
        out = op(*pos, **kw)
        if isinstance(out, torch.Tensor):
            return out.reshape(()) if out.numel() == 1 else out
        return type(out)(o.reshape(()) if isinstance(o, torch.Tensor) and o.numel() == 1 else o for o in out)

    return decomp


def wrap_zero_d(table: dict) -> None:
    """Wrap every non-mutating ``dim`` overload of ``_DIM_OPS`` (around its current entry, if any)."""
    for name in _DIM_OPS:
        packet = getattr(aten, name, None)
        if packet is None:
            continue
        for ov in packet.overloads():
            op = getattr(packet, ov)
            args = op._schema.arguments
            if args and str(args[0].type) == "Tensor" and any(a.name == "dim" for a in args) \
                    and not any(a.alias_info is not None and a.alias_info.is_write for a in args):
                table[op] = _zero_d_wrapper(op, table.get(op))
