"""How the contract fake's libnrt executes a NEFF: the module packed in it runs on XLA:CPU.

The fake library calls ``install`` (through the CPython API of the process that loaded it) on its first
``nrt_load``; from then on ``nrt_load`` / ``nrt_execute`` / ``nrt_unload`` call back into this module with
the NEFF bytes and the host addresses of the tensors' bytes, which only the fake library owns. The programs
go through torchneuron's XLA:CPU driver and its compile cache.
"""

from __future__ import annotations

import ctypes
import threading
import traceback

import torch

from torchneuron.compiler.neff import torch_dtype

from . import neff_format

NRT_FAILURE = 1

_LOAD = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                         ctypes.c_size_t)
_EXEC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                         ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_size_t)
_UNLOAD = ctypes.CFUNCTYPE(None, ctypes.c_int64)

_lock = threading.Lock()
_programs: dict[int, tuple[neff_format.Neff, object]] = {}
_callbacks: tuple | None = None  # kept alive for as long as the library may call them


def _report(err: int, errlen: int, e: BaseException) -> int:
    text = f"{type(e).__name__}: {e}".encode()[: max(errlen - 1, 0)] + b"\0"
    ctypes.memmove(err, text, len(text))
    return NRT_FAILURE


def _load(model: int, neff: int, size: int, err: int, errlen: int) -> int:
    try:
        program = neff_format.read(ctypes.string_at(neff, size))
        exe = _xla_cpu(program.stablehlo)
        with _lock:
            _programs[model] = (program, exe)
        return 0
    except BaseException as e:  # noqa: BLE001 - an exception must not cross into C
        return _report(err, errlen, e)


def _xla_cpu(stablehlo: str):
    """The module on XLA:CPU, through torchneuron's compile cache (never through its runtime: this code runs
    inside libnrt, under whichever runtime loaded it)."""
    from torchneuron.compiler import driver, keys, xla_cpu

    key = keys.cache_key(stablehlo, backend=xla_cpu.NAME, target="fake-nrt", lnc=0, opt_level=0,
                         compiler_version=xla_cpu.version())
    return driver.default_cache().get_or_compile(key, lambda: xla_cpu.compile_to_bytes(stablehlo), xla_cpu.load)


def _host_tensor(address: int, t) -> torch.Tensor:
    """A copy of an input in memory torch owns. XLA:CPU drops its reference to an input on its own thread,
    possibly after this call returned; a tensor over a Python buffer (torch.frombuffer) would then take the GIL
    there, and abort the process if the interpreter is exiting by then."""
    out = torch.empty(t.shape, dtype=torch_dtype(t.element))
    if t.nbytes:
        ctypes.memmove(out.data_ptr(), address, t.nbytes)
    return out


def _execute(model: int, n_in: int, inputs, n_out: int, outputs, err: int, errlen: int) -> int:
    try:
        with _lock:
            program, exe = _programs[model]
        sig = program.signature
        if n_in != len(sig.inputs) or n_out != len(sig.outputs):
            raise ValueError(f"{n_in} inputs / {n_out} outputs for a program of {len(sig.inputs)} / {len(sig.outputs)}")
        args = [_host_tensor(inputs[i], t) for i, t in enumerate(sig.inputs)]
        results = exe.run(args)
        for i, (r, t) in enumerate(zip(results, sig.outputs)):
            if t.nbytes:
                r = r.contiguous()
                ctypes.memmove(outputs[i], r.data_ptr(), t.nbytes)
        return 0
    except BaseException as e:  # noqa: BLE001
        traceback.print_exc()
        return _report(err, errlen, e)


def _unload(model: int) -> None:
    with _lock:
        _programs.pop(model, None)


def install(library_path: str) -> None:
    """Register the callbacks with the fake library at ``library_path`` (the copy this process loaded)."""
    global _callbacks
    lib = ctypes.CDLL(library_path)
    _callbacks = (_LOAD(_load), _EXEC(_execute), _UNLOAD(_unload), lib)
    lib.fake_nrt_register_executor(*_callbacks[:3])
