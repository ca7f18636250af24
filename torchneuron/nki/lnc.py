"""Logical NeuronCores that talk to each other: an LNC=2 launch (`kernel[2]`) runs its two programs on two
threads, as AWS's simulator does, so `nisa.sendrecv` and `nisa.core_barrier` can exchange data and wait.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import ERR_INVALID_ARG, NkiError, fail

WAIT_S = 60.0  # a peer that never sends or never arrives is a kernel bug: fail instead of hanging


class CoreExchange:
    """Mailboxes (one per pipe and direction) and barriers shared by the cores of one launch."""

    def __init__(self, cores: int) -> None:
        self.cores = cores
        self._lock = threading.Lock()
        self._mail: dict[tuple[int, int, int], queue.Queue[np.ndarray]] = {}
        self._barriers: dict[tuple[int, ...], threading.Barrier] = {}
        self.failed = threading.Event()

    def _channel(self, pipe: int, sender: int, receiver: int) -> queue.Queue[np.ndarray]:
        with self._lock:
            return self._mail.setdefault((pipe, sender, receiver), queue.Queue())

    def send(self, pipe: int, sender: int, receiver: int, values: np.ndarray) -> None:
        self._check_rank(receiver)
        self._channel(pipe, sender, receiver).put(values)

    def receive(self, pipe: int, sender: int, receiver: int) -> np.ndarray:
        self._check_rank(sender)
        channel = self._channel(pipe, sender, receiver)
        waited = 0.0
        while waited < WAIT_S:
            if self.failed.is_set():
                raise threading.BrokenBarrierError  # another core failed; its error is the one reported
            try:
                return channel.get(timeout=0.05)
            except queue.Empty:
                waited += 0.05
        raise fail(ERR_INVALID_ARG, f"core {receiver} waited {WAIT_S:.0f}s on pipe {pipe} for data from core {sender}, "
                   "which never sent it.", "pair every sendrecv with a matching sendrecv on the peer core.")

    def barrier(self, cores: tuple[int, ...]) -> None:
        for c in cores:
            self._check_rank(c)
        with self._lock:
            b = self._barriers.setdefault(cores, threading.Barrier(len(cores), timeout=WAIT_S))
        if self.failed.is_set():
            raise threading.BrokenBarrierError
        b.wait()

    def abort(self) -> None:
        self.failed.set()
        with self._lock:
            for b in self._barriers.values():
                b.abort()

    def _check_rank(self, rank: int) -> None:
        if not 0 <= rank < self.cores:
            raise fail(ERR_INVALID_ARG, f"core rank {rank} does not exist in an LNC={self.cores} launch.",
                       f"use ranks 0..{self.cores - 1} (nl.program_id(0) is this core's rank).")


def run_concurrently(count: int, body: Callable[[int], Any]) -> list[Any]:
    """Run body(i) for i < count on separate threads; re-raise the first real failure."""
    results: list[Any] = [None] * count
    errors: list[BaseException | None] = [None] * count

    def target(i: int) -> None:
        try:
            results[i] = body(i)
        except BaseException as e:  # noqa: BLE001 - handed to the launching thread below
            errors[i] = e

    threads = [threading.Thread(target=target, args=(i,), name=f"nki-core-{i}") for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    real = [e for e in errors if e is not None and not isinstance(e, threading.BrokenBarrierError)]
    if real:
        raise real[0]
    broken = [e for e in errors if e is not None]
    if broken:
        raise NkiError(ERR_INVALID_ARG, "a core_barrier timed out: not every core reached it.",
                       "make every core listed in the barrier call core_barrier the same number of times.")
    return results


def bind_exchange(exchange: CoreExchange) -> Callable[[Callable[[int], Any]], Callable[[int], Any]]:
    """Decorate a per-core body so a failure on one core aborts waits on the others."""
    def wrap(body: Callable[[int], Any]) -> Callable[[int], Any]:
        def run(i: int) -> Any:
            try:
                return body(i)
            except BaseException:
                exchange.abort()
                raise
        return run
    return wrap
