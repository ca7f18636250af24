"""Tensors a collective kept alive are released on a user thread, never on the transport's (gloo's) threads:
since torch 2.13 releasing a tensor Python has seen takes the GIL, and a transport thread that asks for it
while the interpreter finalizes is killed inside a noexcept destructor, aborting a run that succeeded.

Each check drops the Work (and the tensor) before the transfer is over, so the collective's own references
are the last ones; a weakref finalizer records the thread that released the tensor. Run under torchrun.
"""

from __future__ import annotations

import threading
import time
import weakref

import torch
import torch.distributed as dist
from _report import run_job
from torch.distributed import ReduceOp

from torchneuron import _C


def _released_on(issue) -> list[str]:
    threads: list[str] = []
    t = torch.ones(1 << 16, device="neuron")
    weakref.finalize(t, lambda: threads.append(threading.current_thread().name))
    work = issue(t)
    del t, work  # the collective is still in flight: its references are the last ones
    time.sleep(0.5)  # the transfer completes on a transport thread meanwhile
    assert _C._quiesce_collectives(10.0), "collectives still in flight after 10 s"
    assert threads, "the tensor was not released"
    return threads


def avg_all_reduce():  # through the Python backend (AVG is SUM and a division)
    threads = _released_on(lambda t: dist.all_reduce(t, op=ReduceOp.AVG, async_op=True))
    assert threads == [threading.main_thread().name], threads


def sum_all_reduce():  # through the C++ fast path (HostAllreduce)
    threads = _released_on(lambda t: dist.all_reduce(t, async_op=True))
    assert threads == [threading.main_thread().name], threads


def reduce_scatter():  # a gloo Work without a future: a waiter thread completes it
    world = dist.get_world_size()

    def issue(t):
        return dist.reduce_scatter_tensor(torch.empty(t.numel() // world, device=t.device), t, async_op=True)

    threads = _released_on(issue)
    assert threads == [threading.main_thread().name], threads


def exit_right_after_a_collective():
    # The atexit hook's case: a finished collective whose transport thread may still be releasing its
    # tensors when the interpreter starts finalizing (the job's exit status tells).
    total = torch.full((4,), float(dist.get_rank()), device="neuron")
    dist.all_reduce(total, op=ReduceOp.AVG)
    return total.cpu().tolist()


if __name__ == "__main__":
    run_job("neuron", [("avg_all_reduce", avg_all_reduce), ("sum_all_reduce", sum_all_reduce),
                       ("reduce_scatter", reduce_scatter),
                       ("exit_right_after_a_collective", exit_right_after_a_collective)])
