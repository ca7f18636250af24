"""XLA:CPU drops the input buffers it imported on its own threads. What torchneuron hands it must not need the
GIL to be released: not the Python object of the tensor it came from (torch 2.13 keeps a tensor's PyObject for
as long as C++ references it), not a storage over a Python buffer. Otherwise a program ending while XLA still
holds an input aborts at exit ("terminate called without an active exception")."""

from __future__ import annotations

import gc
import weakref

import torch

from torchneuron import _C


def _collected(make_capsule) -> bool:
    t = torch.arange(8, dtype=torch.float32)
    gone = []
    weakref.finalize(t, gone.append, True)
    capsule = make_capsule(t)
    del t
    gc.collect()
    alive = not gone
    del capsule
    gc.collect()
    return not alive


def test_the_capsule_does_not_keep_the_python_tensor():
    assert _collected(_C._to_dlpack_unshared)


def test_torchs_own_capsule_would_keep_it():
    # the reason for _to_dlpack_unshared: if torch stops preserving PyObjects this test says so
    assert not _collected(torch.utils.dlpack.to_dlpack)


def test_the_capsule_shares_the_memory_and_is_consumed_once():
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    u = torch.from_dlpack(_C._to_dlpack_unshared(t))
    assert u.data_ptr() == t.data_ptr() and u.shape == t.shape
    u.add_(1)
    assert torch.equal(t, torch.arange(1, 7, dtype=torch.float32).reshape(2, 3))
    unused = _C._to_dlpack_unshared(t)
    del unused  # never consumed: its deleter releases the alias
    assert t.sum().item() == 21.0
