"""Compiles that run beside the caller, on one worker thread.

The simulator's cross-check compiles each new piece's StableHLO for XLA:CPU, but only needs the executable at
the piece's first call. Started when the piece is built, the compile runs while the main thread lowers the
next pieces and graphs: XLA releases the GIL while it compiles, so on two cores most of it is hidden.

``result()`` on a task the worker has not started runs it on the calling thread (it is needed now; waiting
behind other compiles would only idle). At interpreter exit, before any ``atexit`` handler (jax's clears its
backends in one), queued tasks are dropped and the running one is waited for: no compile is cut off inside XLA.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import queue
import threading
from collections.abc import Callable
from typing import Any


class Task:
    """One deferred call: runs once, on the worker or on the first thread that asks for its result."""

    def __init__(self, fn: Callable[[], Any]):
        self._fn: Callable[[], Any] | None = fn
        self._claim_lock = threading.Lock()
        self._claimed = False
        self._done = threading.Event()
        self._result: Any = None
        self._error: BaseException | None = None

    def claim(self) -> bool:
        with self._claim_lock:
            if self._claimed:
                return False
            self._claimed = True
            return True

    def run(self) -> None:
        try:
            self._result = self._fn()
        except BaseException as e:  # noqa: BLE001 - re-raised on the thread that asks for the result
            self._error = e
        finally:
            self._fn = None
            self._done.set()

    def drop(self) -> None:
        if self.claim():
            self._error = RuntimeError("torchneuron: a background compile was dropped at interpreter exit")
            self._fn = None
            self._done.set()

    def result(self) -> Any:
        if self.claim():
            self.run()
        else:
            self._done.wait()
        if self._error is not None:
            raise self._error
        return self._result


_lock = threading.Lock()
_queue: queue.SimpleQueue[Task | None] = queue.SimpleQueue()
_worker: threading.Thread | None = None
_running: list[Task] = []
_stopping = False


def submit(fn: Callable[[], Any]) -> Task:
    """Start ``fn`` on the worker; ``result()`` returns its value or raises its exception."""
    global _worker
    task = Task(fn)
    with _lock:
        if _stopping:
            return task  # at exit: runs on the caller if anyone still asks
        if _worker is None:
            _worker = threading.Thread(target=_work, name="torchneuron-compile", daemon=True)
            _worker.start()
            # threading's exit hooks run before atexit's (private, but what concurrent.futures relies on)
            getattr(threading, "_register_atexit", atexit.register)(_drop_queued)
    _queue.put(task)
    return task


def _forget_in_child() -> None:
    """A forked child (a DataLoader worker) has no worker thread, and a lock held at the fork stays held:
    it starts afresh (a task it inherited runs on whoever asks for its result)."""
    global _lock, _queue, _worker, _stopping
    _lock, _queue, _worker, _stopping = threading.Lock(), queue.SimpleQueue(), None, False
    _running.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def on_worker() -> bool:
    return threading.current_thread() is _worker


def _one_openmp_thread() -> None:
    """The worker's ATen ops (the check's copies and comparison) run on this thread alone. With a team of its
    own, libgomp would manage more threads than there are cores and stop spinning between parallel regions:
    every region of the main thread would then pay a futex wake-up (a tiny Llama's compiled training step
    1.8x slower on two cores). The OpenMP thread count is per calling thread, so the main thread keeps its."""
    import torch

    torch.get_num_threads()  # ATen's per-thread OpenMP set-up runs first (it would undo the setting)
    try:
        with open("/proc/self/maps") as maps:
            runtime = next((line.split()[-1] for line in maps if "libgomp" in line or "libiomp" in line
                            or "libomp." in line), None)
    except OSError:  # not Linux: leave the runtime alone
        return
    if runtime is not None:
        ctypes.CDLL(runtime).omp_set_num_threads(1)


def _work() -> None:
    _one_openmp_thread()
    while True:
        task = _queue.get()
        if task is None:
            return
        if not task.claim():
            continue
        with _lock:
            _running.append(task)
        try:
            task.run()
        finally:
            with _lock:
                _running.remove(task)


def _drop_queued() -> None:
    global _stopping
    with _lock:
        _stopping = True
        running = list(_running)
    while True:
        try:
            task = _queue.get_nowait()
        except queue.Empty:
            break
        if task is not None:
            task.drop()
    _queue.put(None)
    for task in running:
        task._done.wait()
