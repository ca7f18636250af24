"""A core-ATen FX graph (static shapes, constants lifted, flat tensor outputs) → StableHLO text.

Uses torch-mlir's FX importer (``import_stateless_graph``: every placeholder becomes a function argument),
then torch-mlir's pipelines ``torchdynamo-export-to-torch-backend-pipeline`` and
``torch-backend-to-stablehlo-backend-pipeline``. The text is printed without locations so that the same
computation always yields the same text (and the same cache key).
"""

from __future__ import annotations

import os
import pickle
import tempfile
import warnings
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


# Set to False by a process that is itself a disposable worker (the coverage sweep), where a fork per module
# costs more than it protects.
ISOLATE = True


def to_stablehlo(gm: fx.GraphModule, func_name: str = "main", isolate: bool | None = None) -> str:
    """Lower a graph prepared by ``passes.run_pipeline`` to StableHLO text with ``func.func @main``.

    With ``isolate`` (the default where ``fork`` exists) torch-mlir runs in a forked child: some invalid
    inputs make its passes abort or segfault instead of reporting an error, and an eager op must never take
    the user's process down. The child inherits the graph and the imported torch-mlir, so this costs a few
    milliseconds on a path that compiles anyway.
    """
    if (ISOLATE if isolate is None else isolate) and hasattr(os, "fork"):
        return _isolated(gm, func_name)
    return _to_stablehlo(gm, func_name)


def _isolated(gm: fx.GraphModule, func_name: str) -> str:
    import torch_mlir.compiler_utils  # noqa: F401  (import once in the parent, inherited by children)
    import torch_mlir.extras.fx_importer  # noqa: F401

    r, w = os.pipe()
    err = tempfile.TemporaryFile()
    with warnings.catch_warnings():  # JAX warns on any fork; the child never touches JAX
        warnings.simplefilter("ignore", RuntimeWarning)
        pid = os.fork()
    if pid == 0:  # child: lower, send a tagged result, exit without running the parent's atexit hooks
        code = 0
        try:
            os.close(r)
            os.dup2(err.fileno(), 2)
            try:
                payload = b"OK" + _to_stablehlo(gm, func_name).encode()
            except StableHLOLoweringError as e:
                payload = b"LE" + pickle.dumps((str(e), e.mlir_op))
            except LoweringError as e:
                payload = b"EX" + pickle.dumps((str(e), None))
            except BaseException as e:  # noqa: BLE001 - reported to the parent
                payload = b"EX" + pickle.dumps((f"{type(e).__name__}: {e}", None))
            with os.fdopen(w, "wb") as f:
                f.write(payload)
        except BaseException:  # noqa: BLE001
            code = 3
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    err.seek(0)
    stderr = err.read().decode(errors="replace")
    err.close()
    if data.startswith(b"OK"):
        return data[2:].decode()
    if data.startswith(b"LE"):
        msg, op = pickle.loads(data[2:])
        if op is None:  # MLIR printed its diagnostics to the child's stderr, not into the exception
            op, first = summarize_mlir_error(stderr)
            if first != "unknown error":
                msg = f"torch-mlir cannot lower {op or 'the graph'} to StableHLO: {first}"
        raise StableHLOLoweringError(msg, op)
    if data.startswith(b"EX"):
        msg, _ = pickle.loads(data[2:])
        raise LoweringError(msg)
    mlir_op, first = summarize_mlir_error(stderr)
    how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else \
        f"exit {os.WEXITSTATUS(status)}"
    raise StableHLOLoweringError(f"torch-mlir crashed ({how}) lowering {mlir_op or 'the graph'}: {first}", mlir_op)


class _NativeStderr:
    """Capture what native code writes to file descriptor 2 (restored on exit; ``.text`` afterwards)."""

    def __enter__(self):
        self.text = ""
        self._file = tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read().decode(errors="replace")
        self._file.close()
        return False


def _to_stablehlo(gm: fx.GraphModule, func_name: str) -> str:
    from torch_mlir import ir
    from torch_mlir.compiler_utils import OutputType, TorchMlirCompilerError, lower_mlir_module, \
        run_pipeline_with_repro_report
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras.fx_importer import FxImporter

    context = ir.Context()
    torch_d.register_dialect(context)
    importer = FxImporter(context=context)
    module = None
    backend_ir = False  # True once the module is in Torch backend IR (the StableHLO pipeline is running)
    try:
        importer.import_stateless_graph(gm.graph, func_name=func_name)
        module = importer.module
        with _NativeStderr() as diagnostics:  # MLIR prints its diagnostics to fd 2, not into the exception
            run_pipeline_with_repro_report(
                module,
                "builtin.module(func.func(torch-match-quantized-custom-ops), "
                "torchdynamo-export-to-torch-backend-pipeline{ extra-library=})",
                "Lowering TorchFX IR -> Torch Backend IR")
            backend_ir = True
            lower_mlir_module(False, OutputType.STABLEHLO, module)
    except TorchMlirCompilerError as e:
        mlir_op, first = summarize_mlir_error(str(e) + "\n" + diagnostics.text)
        if backend_ir and not _is_op_name(mlir_op):
            # The backend-contract check reports the first illegal op in program order, usually a constant
            # feeding the op that really failed; name the op the conversion left behind instead.
            leftover = _unconverted_op(module)
            if leftover is not None:
                mlir_op = leftover
                first = f"the conversion left it unconverted (reported as: {first.split(':')[0]})"
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


# torch-dialect ops that are operands/plumbing of a real op, never the reason a conversion fails
_PLUMBING = ("torch.constant.", "torch.prim.ListConstruct", "torch.prim.TupleConstruct", "torch_c.")


def _is_op_name(mlir_op: str | None) -> bool:
    return mlir_op is not None and not mlir_op.startswith(_PLUMBING)


def _unconverted_op(module) -> str | None:
    """The first torch-dialect op (an ATen op, or a ``torch.operator``'s name) left in a module whose
    StableHLO conversion failed, or None. The conversion to StableHLO is partial, so what it could not
    convert is still there, with its constant operands."""
    found: list[str] = []

    def walk(op) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    name = child.operation.name
                    if name == "torch.operator":
                        found.append(str(child.operation.attributes["name"]).strip('"'))
                    elif name.startswith("torch.") and _is_op_name(name):
                        found.append(name)
                    walk(child.operation)

    try:
        walk(module.operation)
    except Exception:  # noqa: BLE001 - diagnosis only: never mask the original error
        return None
    aten = [n for n in found if n.startswith("torch.aten.")]
    return (aten or found or [None])[0]
