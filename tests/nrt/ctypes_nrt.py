"""ctypes declarations of the fake libnrt's entry points, for the scripts that probe its contract directly.
The prototypes mirror csrc/runtime/nrt/nrt_abi.h."""

from __future__ import annotations

import ctypes as C

SUCCESS, INVALID, RESOURCE, UNSUPPORTED_NEFF_VERSION = 0, 2, 4, 10
UNINITIALIZED, CLOSED, NUM_ERR, NC_BUSY = 13, 14, 1003, 1005
PYTORCH, DEVICE = 3, 0


class MemoryStats(C.Structure):
    _fields_ = [("bytes_used", C.c_size_t), ("bytes_limit", C.c_size_t)]


class InstanceInfo(C.Structure):
    _fields_ = [("family", C.c_uint32), ("size", C.c_uint32), ("arch_name", C.c_char * 16),
                ("device_revision", C.c_char * 8)]


def load(path: str = "libnrt.so.1") -> C.CDLL:
    lib = C.CDLL(path)
    p, s, v = C.c_void_p, C.c_size_t, C.POINTER(C.c_void_p)
    for name, args in {
        "nrt_init": [C.c_int, C.c_char_p, C.c_char_p], "nrt_get_visible_vnc_count": [C.POINTER(C.c_uint32)],
        "nrt_get_instance_info": [C.POINTER(InstanceInfo), s],
        "nrt_get_vnc_memory_stats": [C.c_uint32, C.POINTER(MemoryStats), s, C.POINTER(s)],
        "nrt_tensor_allocate": [C.c_int, C.c_int, s, C.c_char_p, v],
        "nrt_tensor_allocate_slice": [p, s, s, C.c_char_p, v],
        "nrt_tensor_read": [p, p, s, s], "nrt_tensor_write": [p, p, s, s], "nrt_tensor_copy": [p, s, p, s, s],
        "nrt_load": [p, s, C.c_int32, C.c_int32, v], "nrt_allocate_tensor_set": [v],
        "nrt_add_tensor_to_tensor_set": [p, C.c_char_p, p], "nrt_execute": [p, p, p],
        "fake_nrt_inject": [C.c_char_p, C.c_int, C.c_int],
    }.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = C.c_int
    lib.nrt_tensor_get_va.argtypes, lib.nrt_tensor_get_va.restype = [p], p
    lib.nrt_tensor_free.argtypes, lib.nrt_tensor_free.restype = [v], None
    lib.nrt_close.argtypes, lib.nrt_close.restype = [], None
    return lib


def init(lib: C.CDLL) -> int:
    return lib.nrt_init(PYTORCH, b"2.13.0", b"test")


def allocate(lib: C.CDLL, vnc: int, size: int) -> tuple[int, C.c_void_p]:
    t = C.c_void_p()
    return lib.nrt_tensor_allocate(DEVICE, vnc, size, b"t", C.byref(t)), t
