"""Lazy initialisation of the neuron runtime, with torch.cuda's rules: nothing starts at import, calls
made before initialisation (seeding) are queued, and a forked child of an initialised parent is refused."""

from __future__ import annotations

import threading
from typing import Callable

from torchneuron import _C

_lock = threading.RLock()
_queued: list[Callable[[], None]] = []
_initialising = False


def is_initialized() -> bool:
    return _C._is_initialized()


def _is_in_bad_fork() -> bool:
    return _C._is_in_bad_fork()


def _lazy_call(fn: Callable[[], None]) -> None:
    if is_initialized():
        fn()
    else:
        _queued.append(fn)


def _lazy_init() -> None:
    global _initialising
    if is_initialized() and not _initialising:
        return
    if _initialising and _lock._is_owned():  # a queued call made during initialisation
        return
    if _is_in_bad_fork():
        raise RuntimeError(
            "Cannot re-initialize neuron in forked subprocess: the parent process had already initialised the "
            "neuron device. To use neuron with multiprocessing, you must use the 'spawn' start method "
            "(torch.multiprocessing.set_start_method('spawn'))."
        )
    with _lock:
        if is_initialized() and not _queued:
            return
        _initialising = True
        try:
            _C._lazy_init()
            while _queued:
                _queued.pop(0)()
        finally:
            _initialising = False


def init() -> None:
    """Initialises the neuron runtime now (it otherwise starts on first use)."""
    _lazy_init()
