"""What carries a collective's bytes between ranks: the seam below the c10d "neuron" backend.

The backend (``collectives.py``) implements c10d's semantics (reduce ops gloo lacks, layouts, validation,
stream order, Work objects); a transport only moves and reduces buffers with the natively supported ops.
Each method takes the buffers ``buffer(t)`` returned for the user's device tensors and returns c10d Works.

- ``HostGlooTransport`` (simulator): device memory is host RAM owned by the runtime, so ``buffer`` is a
  zero-copy host view of the device tensor and gloo runs directly on it. Nothing is staged or copied.
- ``NrtTransport`` (Trn host, ``nrt_transport.py``): Neuron collectives through the nrt runtime.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as c10d
from torch.distributed import ReduceOp

# Reduce ops every transport implements natively; AVG and PREMUL_SUM are built on SUM by the backend.
NATIVE_OPS = (ReduceOp.SUM, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.BAND, ReduceOp.BOR,
              ReduceOp.BXOR)


class Transport(Protocol):
    description: str

    def buffer(self, t: torch.Tensor) -> torch.Tensor: ...
    def allreduce(self, bufs: list[torch.Tensor], op: ReduceOp, timeout: timedelta | None) -> dist.Work: ...
    def broadcast(self, bufs: list[torch.Tensor], root: int, timeout: timedelta | None) -> dist.Work: ...
    def reduce(self, bufs: list[torch.Tensor], op: ReduceOp, root: int, timeout: timedelta | None) -> dist.Work: ...
    def allgather(self, outs: list[list[torch.Tensor]], ins: list[torch.Tensor],
                  timeout: timedelta | None) -> dist.Work: ...
    def allgather_into(self, out: torch.Tensor, inp: torch.Tensor, timeout: timedelta | None) -> dist.Work: ...
    def gather(self, outs: list[list[torch.Tensor]], ins: list[torch.Tensor], root: int,
               timeout: timedelta | None) -> dist.Work: ...
    def scatter(self, outs: list[torch.Tensor], ins: list[list[torch.Tensor]], root: int,
                timeout: timedelta | None) -> dist.Work: ...
    def reduce_scatter(self, outs: list[torch.Tensor], ins: list[list[torch.Tensor]], op: ReduceOp,
                       timeout: timedelta | None) -> dist.Work: ...
    def reduce_scatter_into(self, out: torch.Tensor, inp: torch.Tensor, op: ReduceOp,
                            timeout: timedelta | None) -> dist.Work: ...
    def alltoall_single(self, out: torch.Tensor, inp: torch.Tensor, out_splits: list[int], in_splits: list[int],
                        timeout: timedelta | None) -> dist.Work: ...
    def alltoall(self, outs: list[torch.Tensor], ins: list[torch.Tensor], timeout: timedelta | None) -> dist.Work: ...
    def send(self, bufs: list[torch.Tensor], dst: int, tag: int) -> dist.Work: ...
    def recv(self, bufs: list[torch.Tensor], src: int, tag: int) -> dist.Work: ...
    def recv_anysource(self, bufs: list[torch.Tensor], tag: int) -> dist.Work: ...
    def barrier(self, timeout: timedelta | None) -> dist.Work: ...
    def monitored_barrier(self, timeout: timedelta | None, wait_all_ranks: bool) -> None: ...
    def set_timeout(self, timeout: timedelta) -> None: ...
    def shutdown(self) -> None: ...
    def abort(self) -> None: ...


def _with_timeout(opts, timeout: timedelta | None):
    if timeout is not None:
        opts.timeout = timeout
    return opts


class HostGlooTransport:
    """gloo on zero-copy host views of the device buffers (the simulator's device memory is host RAM)."""

    description = "gloo on host views of device memory (simulator)"

    def __init__(self, store: dist.Store, rank: int, size: int, timeout: timedelta, group_name: str,
                 host_view, prefix: str = "neuron-transport/") -> None:
        opts = dist.ProcessGroupGloo._Options()
        opts._timeout = timeout
        opts._devices = [dist.ProcessGroupGloo.create_default_device()]
        # gloo's default two worker threads: with one, each small collective waits for the previous one's
        # completion to unwind (0.3-0.6x gloo-on-CPU at <= 1 MiB, benchmarks/collectives.py). As with gloo,
        # two async collectives may then overlap (docs/distributed.md).
        opts._threads = 2
        opts.group_name = group_name
        # Its own key space in the group's store (a "cpu:gloo" sub-backend of the same group uses another).
        self.gloo = dist.ProcessGroupGloo(dist.PrefixStore(prefix, store), rank, size, opts)
        self._host_view = host_view
        self._allreduce_opts: dict = {}

    def buffer(self, t: torch.Tensor) -> torch.Tensor:
        return self._host_view(t)

    def allreduce(self, bufs, op, timeout):
        opts = self._allreduce_opts.get(op) if timeout is None else None
        if opts is None:  # options are copied into each call, so one object per op serves them all
            opts = _with_timeout(c10d.AllreduceOptions(), timeout)
            opts.reduceOp = op
            if timeout is None:
                self._allreduce_opts[op] = opts
        return self.gloo.allreduce(bufs, opts)

    def broadcast(self, bufs, root, timeout):
        opts = _with_timeout(c10d.BroadcastOptions(), timeout)
        opts.rootRank = root
        return self.gloo.broadcast(bufs, opts)

    def reduce(self, bufs, op, root, timeout):
        opts = _with_timeout(c10d.ReduceOptions(), timeout)
        opts.reduceOp = op
        opts.rootRank = root
        return self.gloo.reduce(bufs, opts)

    def allgather(self, outs, ins, timeout):
        return self.gloo.allgather(outs, ins, _with_timeout(c10d.AllgatherOptions(), timeout))

    def allgather_into(self, out, inp, timeout):
        return self.gloo._allgather_base(out, inp, _with_timeout(c10d.AllgatherOptions(), timeout))

    def gather(self, outs, ins, root, timeout):
        opts = _with_timeout(c10d.GatherOptions(), timeout)
        opts.rootRank = root
        return self.gloo.gather(outs, ins, opts)

    def scatter(self, outs, ins, root, timeout):
        opts = _with_timeout(c10d.ScatterOptions(), timeout)
        opts.rootRank = root
        return self.gloo.scatter(outs, ins, opts)

    def reduce_scatter(self, outs, ins, op, timeout):
        opts = _with_timeout(c10d.ReduceScatterOptions(), timeout)
        opts.reduceOp = op
        return self.gloo.reduce_scatter(outs, ins, opts)

    def reduce_scatter_into(self, out, inp, op, timeout):
        opts = _with_timeout(c10d.ReduceScatterOptions(), timeout)
        opts.reduceOp = op
        return self.gloo._reduce_scatter_base(out, inp, opts)

    def alltoall_single(self, out, inp, out_splits, in_splits, timeout):
        return self.gloo.alltoall_base(out, inp, out_splits, in_splits,
                                       _with_timeout(c10d.AllToAllOptions(), timeout))

    def alltoall(self, outs, ins, timeout):
        return self.gloo.alltoall(outs, ins, _with_timeout(c10d.AllToAllOptions(), timeout))

    def send(self, bufs, dst, tag):
        return self.gloo.send(bufs, dst, tag)

    def recv(self, bufs, src, tag):
        return self.gloo.recv(bufs, src, tag)

    def recv_anysource(self, bufs, tag):
        return self.gloo.recv_anysource(bufs, tag)

    def barrier(self, timeout):
        return self.gloo.barrier(_with_timeout(c10d.BarrierOptions(), timeout))

    def monitored_barrier(self, timeout, wait_all_ranks):
        if timeout is None:
            self.gloo.monitored_barrier(wait_all_ranks=wait_all_ranks)
        else:
            self.gloo.monitored_barrier(timeout, wait_all_ranks)

    def set_timeout(self, timeout):
        self.gloo.set_timeout(timeout)

    def shutdown(self):
        self.gloo.shutdown()

    def abort(self):
        self.gloo.abort()
