"""Hardware-rule violations, named with the documented NKI error codes and located in the kernel's source.

The real compiler reports `err_*` codes (reference §4.1) pointing at the kernel line that broke a rule. The
simulator executes the kernel eagerly, so the offending call is on the Python stack when a rule is checked:
we walk the stack outwards to the first frame that is not simulator code, which is the kernel's own line.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from types import FrameType

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__import__("numpy").__file__)))


@dataclass(frozen=True)
class SourceLocation:
    filename: str
    lineno: int
    function: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} (in {self.function})"


_KERNELS_DIR = os.path.join(_PACKAGE_DIR, "calibration")  # kernels shipped here are kernel code, not simulator
_SIMULATOR_FILES: dict[str, bool] = {}


def is_simulator_file(filename: str) -> bool:
    """Simulator (or NumPy) source, as opposed to the kernel's own code. Cached: asked per allocation."""
    known = _SIMULATOR_FILES.get(filename)
    if known is None:
        path = os.path.abspath(filename)
        known = (path.startswith(_PACKAGE_DIR + os.sep) and not path.startswith(_KERNELS_DIR + os.sep)) \
            or path.startswith(os.path.join(_NUMPY_DIR, "numpy") + os.sep)
        _SIMULATOR_FILES[filename] = known
    return known


def kernel_frame() -> FrameType | None:
    """The innermost stack frame outside the simulator: the kernel code that issued the current call."""
    frame = sys._getframe(1)
    known = _SIMULATOR_FILES
    while frame is not None:
        name = frame.f_code.co_filename
        simulator = known.get(name)
        if simulator is None:
            simulator = is_simulator_file(name)
        if not simulator:
            return frame
        frame = frame.f_back
    return None


def kernel_location() -> SourceLocation | None:
    frame = kernel_frame()
    if frame is None:
        return None
    return SourceLocation(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


class NkiError(Exception):
    """A kernel broke a NeuronCore rule; `code` is the documented NKI error name (e.g.
    `err_num_partition_exceed_arch_limit`), `location` the kernel line that did it."""

    def __init__(self, code: str, message: str, hint: str = "", location: SourceLocation | None = None) -> None:
        self.code = code
        self.detail = message
        self.hint = hint
        self.location = location if location is not None else kernel_location()
        where = f"{self.location}: " if self.location else ""
        text = f"{where}[{code}] {message}"
        if hint:
            text += f" Fix: {hint}"
        super().__init__(text)

    @property
    def filename(self) -> str | None:
        return self.location.filename if self.location else None

    @property
    def lineno(self) -> int | None:
        return self.location.lineno if self.location else None


# The current `nki.isa` names its hardware-rule exception `NkiValidationError`; one class serves both.
NkiValidationError = NkiError


class NkiIndexError(NkiError, IndexError):
    """An access outside a tensor. It is an `IndexError` too, the type AWS's simulator raises (and its
    tests catch) for an out-of-bounds DMA."""


class NkiDmaIndexError(NkiIndexError):
    """An out-of-bounds indirect DMA under `oob_mode.error`. Its message is NumPy's, as AWS's simulator
    reports it ("index 66048 is out of bounds for axis 0 with size 65536": flat element and tensor size);
    the error name, kernel line and fix are attached as notes, shown with the traceback."""

    def __init__(self, flat_index: int, size: int, tensor: str, hint: str) -> None:
        super().__init__(ERR_OOB, f"indirect access to tensor `{tensor}` at flat element {flat_index} of {size}.",
                         hint)
        full = str(Exception.__str__(self))
        self.args = (f"index {flat_index} is out of bounds for axis 0 with size {size}",)
        self.add_note(full)

    def __str__(self) -> str:
        return str(self.args[0])


class NkiWarning(UserWarning):
    """Legal on the simulator but wrong or wasteful on hardware (e.g. a partially written output)."""


def fail(code: str, message: str, hint: str = "") -> NkiError:
    """Build the error for `raise fail(...)`; kept as an expression so type checkers see the raise."""
    if code == ERR_OOB:
        return NkiIndexError(code, message, hint)
    return NkiError(code, message, hint)


def warn(message: str) -> None:
    where = kernel_location()
    warnings.warn(f"{where}: {message}" if where else message, NkiWarning, stacklevel=3)


# Codes used by the simulator. The first group is documented by AWS (reference §4.1); the capacity codes
# are torchneuron's own, because AWS's simulator does not check SBUF/PSUM capacity at all.
ERR_PARTITIONS = "err_num_partition_exceed_arch_limit"
ERR_PARTITION_MISMATCH = "err_num_partition_mismatch"
ERR_DIM_LIMIT = "err_size_of_dimension_exceed_arch_limit"
ERR_OOB = "err_tensor_access_out_of_bound"
ERR_MEMORY = "err_unsupported_memory"
ERR_1D_ARANGE = "err_1d_arange_not_supported"
ERR_MIXED_INDEXING = "err_unsupported_mixing_basic_advanced_tensor_indexing"
ERR_LEADING_PARTITION = "err_leading_dimension_of_tensor_must_be_partition"
ERR_STORE_SHAPE = "err_store_dst_shape_smaller_than_other_shape"
ERR_ACT_SCALE_TYPE = "err_activation_scale_invalid_type"
ERR_ACT_BIAS_TYPE = "err_activation_bias_invalid_type"
ERR_ACT_SCALE_SHAPE = "err_activation_scale_scalar_or_vector"
ERR_TRUTH_VALUE = "err_ambiguous_tensor_truth_value"
ERR_ANNOTATION = "err_annotation_shape_mismatch"
ERR_ARANGE_CONTROL_FLOW = "err_control_flow_condition_depending_on_arange"
ERR_MAX_DIMS = "err_exceed_max_supported_dimension"
ERR_HBM_INIT = "err_hbm_tensor_with_init_value_not_supported"
ERR_NESTED_SPMD = "err_nested_kernel_with_spmd_grid"
ERR_OUTSIDE_KERNEL = "err_nki_api_outside_of_nki_kernel"
ERR_NOT_WRITTEN = "err_tensor_output_not_written_to"
ERR_START_PARTITION = "err_unsupported_start_partition"
ERR_DTYPE = "err_unsupported_dtype"
ERR_REDUCE_AXIS = "err_unsupported_reduce_axis"
ERR_SHAPE = "err_shape_mismatch"
ERR_SHARED_HBM_LEVEL = "err_shared_hbm_must_in_kernel_level"
ERR_SBUF_CAPACITY = "err_sbuf_capacity_exceeded"
ERR_PSUM_CAPACITY = "err_psum_capacity_exceeded"
ERR_INVALID_ARG = "err_invalid_argument"
ERR_GRID = "err_invalid_spmd_grid"
