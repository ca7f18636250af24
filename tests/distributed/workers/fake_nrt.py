"""A contract fake of the nrt runtime's Neuron collectives (nrt_transport.CollectivesRuntime): the five
primitives run over gloo on host views, synchronously (a Future already completed is within the contract).
It checks what the real runtime will receive: device tensors, contiguous buffers, native reduce ops only."""

from __future__ import annotations

import threading
from datetime import timedelta

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as c10d
from torch.distributed import ReduceOp

from torchneuron import _C
from torchneuron.distributed.transport import NATIVE_OPS

CALLS: list[str] = []


def _host(t: torch.Tensor) -> torch.Tensor:
    assert t.device.type == "neuron", f"the runtime gets device tensors, got {t.device}"
    assert t.is_contiguous(), "the runtime gets contiguous buffers"
    _C._drain_current_stream(t.device.index)
    return _C._host_view(t)


def _done() -> torch.futures.Future:
    f = torch.futures.Future()
    f.set_result(None)
    return f


def _when_done(work) -> torch.futures.Future:
    """Point-to-point: completes once the peer took part (waiting here would deadlock a ring exchange)."""
    f = torch.futures.Future()

    def wait():
        try:
            work.wait()
            f.set_result(None)
        except Exception as e:  # noqa: BLE001  (handed to the Future's waiter)
            f.set_exception(e)

    threading.Thread(target=wait, daemon=True).start()
    return f


class FakeCollectives:
    def __init__(self, store: dist.Store, rank: int, size: int, timeout: timedelta) -> None:
        self.gloo = dist.ProcessGroupGloo(dist.PrefixStore("fake-nrt/", store), rank, size, timeout)

    def _opts(self, cls, timeout, **fields):
        opts = cls()
        if timeout is not None:
            opts.timeout = timeout
        for k, v in fields.items():
            setattr(opts, k, v)
        return opts

    def all_reduce(self, t, op, timeout):
        assert any(op == n for n in NATIVE_OPS), op
        CALLS.append("all_reduce")
        self.gloo.allreduce([_host(t)], self._opts(c10d.AllreduceOptions, timeout, reduceOp=op)).wait()
        return _done()

    def all_gather(self, out, inp, timeout):
        CALLS.append("all_gather")
        self.gloo._allgather_base(_host(out), _host(inp), self._opts(c10d.AllgatherOptions, timeout)).wait()
        return _done()

    def reduce_scatter(self, out, inp, op, timeout):
        CALLS.append("reduce_scatter")
        self.gloo._reduce_scatter_base(_host(out), _host(inp),
                                       self._opts(c10d.ReduceScatterOptions, timeout, reduceOp=op)).wait()
        return _done()

    def all_to_all(self, out, inp, timeout):
        CALLS.append("all_to_all")
        self.gloo.alltoall_base(_host(out), _host(inp), [], [], self._opts(c10d.AllToAllOptions, timeout)).wait()
        return _done()

    def send(self, t, peer, tag):
        CALLS.append("send")
        return _when_done(self.gloo.send([_host(t)], peer, tag))

    def recv(self, t, peer, tag):
        CALLS.append("recv")
        return _when_done(self.gloo.recv([_host(t)], peer, tag))

    def barrier(self, timeout):
        CALLS.append("barrier")
        self.gloo.barrier(self._opts(c10d.BarrierOptions, timeout)).wait()
        return _done()

    def close(self):
        self.gloo.shutdown()


_ = ReduceOp  # the primitives take c10d's ReduceOp values
