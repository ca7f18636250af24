"""A core-ATen FX graph (static shapes, constants lifted, flat tensor outputs) → StableHLO text.

Uses torch-mlir's FX importer (``import_stateless_graph``: every placeholder becomes a function argument),
then torch-mlir's pipelines ``torchdynamo-export-to-torch-backend-pipeline`` and
``torch-backend-to-stablehlo-backend-pipeline``. The text is printed without locations so that the same
computation always yields the same text (and the same cache key).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.fx as fx

from .errors import LoweringError, summarize_mlir_error


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: torch.dtype

    @staticmethod
    def of(t: torch.Tensor) -> TensorSpec:
        return TensorSpec(tuple(int(s) for s in t.shape), t.dtype)

    def to_json(self) -> dict:
        return {"shape": list(self.shape), "dtype": str(self.dtype).removeprefix("torch.")}

    @staticmethod
    def from_json(d: dict) -> TensorSpec:
        return TensorSpec(tuple(d["shape"]), getattr(torch, d["dtype"]))

    def __str__(self) -> str:
        return f"{str(self.dtype).removeprefix('torch.')}{list(self.shape)}"


class StableHLOLoweringError(LoweringError):
    """torch-mlir could not legalize an op to StableHLO. ``mlir_op`` is the torch-mlir op name."""

    def __init__(self, message: str, mlir_op: str | None):
        super().__init__(message, op=mlir_op)
        self.mlir_op = mlir_op


def to_stablehlo(gm: fx.GraphModule, func_name: str = "main") -> str:
    """Lower a prepared graph (see ``passes``) to StableHLO text with ``func.func @main``."""
    from torch_mlir import ir
    from torch_mlir.compiler_utils import OutputType, TorchMlirCompilerError, lower_mlir_module, \
        run_pipeline_with_repro_report
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras.fx_importer import FxImporter

    context = ir.Context()
    torch_d.register_dialect(context)
    importer = FxImporter(context=context)
    try:
        importer.import_stateless_graph(gm.graph, func_name=func_name)
        module = importer.module
        run_pipeline_with_repro_report(
            module,
            "builtin.module(func.func(torch-match-quantized-custom-ops), "
            "torchdynamo-export-to-torch-backend-pipeline{ extra-library=})",
            "Lowering TorchFX IR -> Torch Backend IR")
        lower_mlir_module(False, OutputType.STABLEHLO, module)
    except TorchMlirCompilerError as e:
        mlir_op, first = summarize_mlir_error(str(e))
        raise StableHLOLoweringError(f"torch-mlir cannot lower {mlir_op or 'the graph'} to StableHLO: {first}",
                                     mlir_op) from None
    except (NotImplementedError, KeyError, AssertionError, TypeError, ValueError) as e:
        # the importer's way of saying "this FX construct / dtype has no MLIR form"
        raise StableHLOLoweringError(f"torch-mlir's FX importer cannot import the graph: "
                                     f"{type(e).__name__}: {e}", None) from None
    text = module.operation.get_asm(enable_debug_info=False, large_elements_limit=None)
    if "dense_resource" in text:  # constants should have been lifted by passes.lift_tensor_constants
        raise LoweringError("internal: a tensor constant reached the IR as a dense_resource blob; "
                            "run passes.lift_tensor_constants before to_stablehlo")
    for dialect in ("torch.", "tm_tensor.", "linalg."):
        if f" {dialect}" in text or f"= {dialect}" in text:
            raise StableHLOLoweringError(f"lowering left {dialect.rstrip('.')} ops in the module "
                                         "(no StableHLO form for them)", None)
    return text
