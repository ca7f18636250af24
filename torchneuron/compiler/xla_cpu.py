"""The ``xla-cpu`` back end (the simulator's compiler): StableHLO → XLA:CPU executable via jaxlib.

Inputs and outputs cross the boundary through DLPack, so an executable reads the device buffers in place
and its results become tensors that own XLA's output buffers: no copies on the way in or out (XLA:CPU copies
an input itself only when its address is not suitably aligned, e.g. a view at an odd offset).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Sequence
from importlib import metadata

import torch
from torch.utils.dlpack import from_dlpack as _torch_from_dlpack

from .. import _C

NAME = "xla-cpu"


_CLIENT = None
_CLIENT_LOCK = threading.Lock()


def _client():
    """torchneuron's own XLA:CPU client (not JAX's): synchronous execution in the calling thread, one device.

    Eager ops are tiny; a thread hand-off per execution (JAX's async CPU dispatch) and Eigen's intra-op
    thread pool cost more than the op itself, so both are off unless ``XLA_FLAGS`` already says otherwise.
    Made once under a lock: two threads racing to make it would each get a client, and an executable
    loaded on one rejects buffers from the other ("on device cpu:0, but replica is assigned to cpu:0").
    """
    global _CLIENT
    if _CLIENT is None:
        with _CLIENT_LOCK:
            if _CLIENT is None:
                from jax._src.lib import _jax, xla_client

                client = xla_client.make_cpu_client(asynchronous=False, num_devices=1)
                device = client.local_devices()[0]
                devices = xla_client.DeviceList((device,))
                _CLIENT = client, device, devices, xla_client, _jax
    return _CLIENT


def _compile_options(xc, optimise: bool = True):
    """Options for every compile and load. The Eigen setting travels as a per-compilation override (what JAX's
    ``compiler_options`` use), not in ``os.environ["XLA_FLAGS"]``, which a JAX the user starts later would
    inherit. ``optimise=False``: LLVM's backend optimisations off (half the compile time, slower code)."""
    import os

    options = xc.CompileOptions()
    overrides = []
    if "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
        overrides.append(("xla_cpu_multi_thread_eigen", False))
    if not optimise:
        overrides.append(("xla_backend_optimization_level", 0))
    options.env_option_overrides = overrides
    return options


def version() -> str:
    try:
        return "jaxlib-" + metadata.version("jaxlib")
    except metadata.PackageNotFoundError:  # pragma: no cover - jaxlib is a hard dependency
        return "jaxlib-unknown"


class XlaCompileError(RuntimeError):
    pass


def compile_to_bytes(stablehlo: str, optimise: bool = True) -> bytes:
    """Compile StableHLO text on XLA:CPU and return the serialised executable (what the disk cache stores)."""
    client, _, devices, xc, _jax = _client()
    try:
        exe = client.compile_and_load(stablehlo, devices, _compile_options(xc, optimise))
    except _jax.JaxRuntimeError as e:
        raise XlaCompileError(f"XLA:CPU rejected the StableHLO module: {e}") from None
    return client.serialize_executable(exe)


def load(blob: bytes) -> XlaCpuExecutable:
    client, _, devices, xc, _ = _client()
    return XlaCpuExecutable(client.deserialize_executable(blob, devices, _compile_options(xc)))


_BYTES = {"pred": 1, "s8": 1, "u8": 1, "f8e4m3fn": 1, "f8e5m2": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
          "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
# An instruction's result: "%name = f32[4096,32768]{1,0} opcode(" (tuples and scalars never match).
_VALUE = re.compile(r"= (\w+)\[([\d,]+)\](?:\{[^}]*\})? ([\w-]+)\(")
# Results that are views or never materialised (a broadcast is read in place by its consumer).
_NOT_MATERIALISED = frozenset({"parameter", "constant", "broadcast", "bitcast", "reshape", "transpose", "slice",
                               "iota", "get-tuple-element", "tuple"})


def largest_value_bytes(hlo: str) -> int:
    """Bytes of the largest array an HLO module computes (views and broadcasts aside), fused or not."""
    best = 0
    for dtype, dims, opcode in _VALUE.findall(hlo):
        if opcode in _NOT_MATERIALISED:
            continue
        n = _BYTES.get(dtype, 4)
        for d in dims.split(","):
            n *= int(d)
        best = max(best, n)
    return best


class XlaCpuExecutable:
    """A loaded XLA:CPU executable. ``run(host_tensors)`` takes contiguous CPU tensors (host views of device
    buffers) in the module's argument order and returns CPU tensors owning XLA's output buffers."""

    backend = NAME

    def __init__(self, loaded):
        self._loaded = loaded
        self._execute = loaded.execute_sharded
        _, self._device, _, _, jax_mod = _client()
        self._to_buffer = jax_mod.dlpack_managed_tensor_to_buffer
        self._to_capsule = jax_mod.buffer_to_dlpack_managed_tensor

    @functools.cached_property
    def working_set_bytes(self) -> int:
        """Device memory a run needs beyond its arguments. XLA's buffer assignment gives its temporaries and its
        results that do not alias an argument; an intermediate XLA:CPU keeps inside one fused kernel (a softmax
        between two matmuls) is in no buffer there, yet eager mode, and a device without that fusion, holds it
        whole: the largest value the program computes is the floor. 0 when jaxlib does not say."""
        try:
            stats = self._loaded.get_compiled_memory_stats()
        except Exception:  # pragma: no cover - an older or newer jaxlib without memory statistics
            return 0
        assigned = stats.temp_size_in_bytes + stats.output_size_in_bytes - stats.alias_size_in_bytes
        return max(0, assigned, largest_value_bytes(self.hlo_text()))

    def buffer(self, t: torch.Tensor):
        """An XLA buffer aliasing ``t`` (``t`` must stay alive while the buffer is used)."""
        return self._to_buffer(_C._to_dlpack_unshared(t), self._device, None)

    def run_buffers(self, buffers: Sequence) -> list[torch.Tensor]:
        """Execute on XLA buffers; results are CPU tensors that own XLA's output buffers."""
        return self.run_buffers_keep(buffers)[0]

    def run_buffers_keep(self, buffers: Sequence) -> tuple[list[torch.Tensor], list]:
        """``run_buffers``, also returning XLA's result buffers (each aliases its tensor's memory), so a
        caller can feed a result to the next program without importing it again."""
        to_capsule = self._to_capsule
        arrays = [o[0] for o in self._execute(buffers).disassemble_into_single_device_arrays()]
        return [_torch_from_dlpack(to_capsule(a)) for a in arrays], arrays

    def run(self, host_tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        to_buffer, device = self._to_buffer, self._device
        return self.run_buffers([to_buffer(_C._to_dlpack_unshared(t), device, None) for t in host_tensors])

    def __repr__(self) -> str:
        return f"XlaCpuExecutable({len(self.hlo_text())} chars of HLO)"

    def hlo_text(self) -> str:
        return self._loaded.get_hlo_text() if hasattr(self._loaded, "get_hlo_text") else ""
