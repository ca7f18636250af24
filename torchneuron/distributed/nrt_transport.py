"""The Trn-host transport: Neuron collectives (libnccom) through the nrt runtime. A seam: not built yet.

On a Trn host the bytes move over NeuronLink/EFA through Neuron collectives, which the runtime drives
(``nrt_cc_global_comm_init``, ``nrta_cc_prepare``/``nrta_cc_schedule``). The runtime (csrc/runtime, the
libnrt-backed ``NrtRuntime``) is to expose the five primitives of ``CollectivesRuntime`` below on device
tensors; this module builds c10d's whole surface on them, exactly as the simulator's transport offers it:
broadcast is an all-reduce of zeros and the root's data, reduce/gather/scatter stage through device buffers,
uneven all-to-all pads to a common chunk. None of it has run against libnrt: the contract is tested against
an in-process fake (tests/distributed/fake_nrt.py) that runs the primitives over gloo.

Rendezvous: Neuron collectives find their root through ``NEURON_RT_ROOT_COMM_ID=<host>:<port>``; when it is
unset, rank 0 picks a free port on MASTER_ADDR and publishes it through the group's store, and every rank
exports it before the runtime creates its communicator.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from typing import Protocol

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp
from torch.futures import Future

from torchneuron import _env

from .transport import HostGlooTransport

_ROOT_KEY = "neuron/root_comm_id"


class CollectivesRuntime(Protocol):
    """What the nrt runtime provides (one communicator per process group). Each call is queued on the
    device's collectives queue after earlier work of the current stream and returns a Future completed
    (value None) when the device buffers hold the result, or with the runtime's error; the runtime applies
    ``timeout`` and reports a dead peer as an error, never a hang."""

    def all_reduce(self, t: torch.Tensor, op: ReduceOp, timeout: timedelta | None) -> Future: ...
    def all_gather(self, out: torch.Tensor, inp: torch.Tensor, timeout: timedelta | None) -> Future: ...
    def reduce_scatter(self, out: torch.Tensor, inp: torch.Tensor, op: ReduceOp,
                       timeout: timedelta | None) -> Future: ...
    def all_to_all(self, out: torch.Tensor, inp: torch.Tensor, timeout: timedelta | None) -> Future: ...
    def send(self, t: torch.Tensor, peer: int, tag: int) -> Future: ...
    def recv(self, t: torch.Tensor, peer: int, tag: int) -> Future: ...
    def barrier(self, timeout: timedelta | None) -> Future: ...
    def close(self) -> None: ...


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))  # rank 0 runs on MASTER_ADDR: a port free on all its interfaces
        return s.getsockname()[1]


def root_comm_id(store: dist.Store, rank: int) -> str:
    """NEURON_RT_ROOT_COMM_ID for this group: the environment's, or one rank 0 publishes through the store."""
    given = _env.get(_env.ROOT_COMM_ID).strip()
    if given:
        return given
    if rank == 0:
        host = _env.get(_env.MASTER_ADDR).strip() or socket.gethostname()
        store.set(_ROOT_KEY, f"{host}:{_free_port()}")
    return store.get(_ROOT_KEY).decode()


def _runtime_collectives(root: str, rank: int, size: int, group_name: str) -> CollectivesRuntime:
    raise RuntimeError(
        "neuron process group on the nrt runtime: Neuron collectives (libnccom, driven through libnrt) are "
        "not built into torchneuron yet, so collectives cannot run on this Trn host. The runtime must provide "
        "torchneuron.distributed.nrt_transport.CollectivesRuntime; until then use TORCHNEURON_RUNTIME=sim")


def _done(works: list[Future], then=None) -> dist.Work:
    fut = torch.futures.collect_all(works) if len(works) != 1 else works[0]

    def finish(f: Future):
        results = f.value()
        for r in results if isinstance(results, list) else []:
            if isinstance(r, Future):
                r.value()  # raises the primitive's error
        if then is not None:
            then()
        return []

    return torch._C._distributed_c10d._create_work_from_future(fut.then(finish))


def _first_tensor(args) -> torch.Tensor | None:
    for a in args:
        if isinstance(a, torch.Tensor):
            return a
        if isinstance(a, (list, tuple)):
            t = _first_tensor(a)
            if t is not None:
                return t
    return None


class ByDevice:
    """Routes each transport call by where its tensors are: CPU tensors to ``cpu``, the rest to ``neuron``."""

    def __init__(self, neuron: NrtTransport, cpu: HostGlooTransport) -> None:
        self.neuron, self.cpu = neuron, cpu
        self.description = neuron.description

    def buffer(self, t: torch.Tensor) -> torch.Tensor:
        return t

    def __getattr__(self, name: str):
        on_neuron, on_cpu = getattr(self.neuron, name), getattr(self.cpu, name)
        if name in ("shutdown", "abort", "set_timeout"):
            return lambda *a: (on_neuron(*a), on_cpu(*a))[0]

        def call(*args):
            t = _first_tensor(args)
            return (on_cpu if t is not None and t.device.type == "cpu" else on_neuron)(*args)

        return call


class NrtTransport:
    description = "Neuron collectives through libnrt"

    def __init__(self, cc: CollectivesRuntime, rank: int, size: int) -> None:
        self.cc, self.rank, self.size = cc, rank, size

    @classmethod
    def create(cls, store: dist.Store, rank: int, size: int, timeout: timedelta, group_name: str,
               runtime=_runtime_collectives) -> ByDevice:
        root = root_comm_id(store, rank)
        os.environ[_env.ROOT_COMM_ID] = root  # libnrt reads it when it creates the global communicator
        neuron = cls(runtime(root, rank, size, group_name), rank, size)
        # CPU tensors (object collectives, CPU metrics) never reach the device: gloo carries them.
        cpu = HostGlooTransport(store, rank, size, timeout, group_name, lambda t: t, prefix="neuron-cpu/")
        return ByDevice(neuron, cpu)

    def buffer(self, t: torch.Tensor) -> torch.Tensor:
        return t  # device tensors: the runtime reads device memory itself

    # ------------------------------------------------------------- the primitives' direct uses

    def allreduce(self, bufs, op, timeout):
        return _done([self.cc.all_reduce(b, op, timeout) for b in bufs])

    def allgather_into(self, out, inp, timeout):
        return _done([self.cc.all_gather(out, inp, timeout)])

    def reduce_scatter_into(self, out, inp, op, timeout):
        return _done([self.cc.reduce_scatter(out, inp, op, timeout)])

    def barrier(self, timeout):
        return _done([self.cc.barrier(timeout)])

    def send(self, bufs, dst, tag):
        return _done([self.cc.send(b, dst, tag) for b in bufs])

    def recv(self, bufs, src, tag):
        return _done([self.cc.recv(b, src, tag) for b in bufs])

    def recv_anysource(self, bufs, tag):
        raise ValueError("neuron process group on the nrt runtime: recv needs a source rank (Neuron collectives "
                         "have no receive-from-any)")

    # ------------------------------------------------------------- composed on the primitives

    def broadcast(self, bufs, root, timeout):
        if self.rank != root:
            for b in bufs:
                b.zero_()
        return _done([self.cc.all_reduce(b, ReduceOp.SUM if b.dtype != torch.bool else ReduceOp.MAX, timeout)
                      for b in bufs])

    def reduce(self, bufs, op, root, timeout):
        if self.rank == root:
            return self.allreduce(bufs, op, timeout)
        scratch = [b.clone() for b in bufs]  # non-root inputs stay as they are
        return _done([self.cc.all_reduce(s, op, timeout) for s in scratch])

    def allgather(self, outs, ins, timeout):
        (out_list,), (inp,) = outs, ins
        flat = torch.empty((self.size, inp.numel()), dtype=inp.dtype, device=inp.device)
        fut = self.cc.all_gather(flat.view(-1), inp.reshape(-1), timeout)

        def unpack():
            for r, o in enumerate(out_list):
                o.view(-1).copy_(flat[r])

        return _done([fut], unpack)

    def gather(self, outs, ins, root, timeout):
        (inp,) = ins
        flat = torch.empty((self.size, inp.numel()), dtype=inp.dtype, device=inp.device)
        fut = self.cc.all_gather(flat.view(-1), inp.reshape(-1), timeout)

        def unpack():
            if self.rank == root:
                for r, o in enumerate(outs[0]):
                    o.view(-1).copy_(flat[r])

        return _done([fut], unpack)

    def scatter(self, outs, ins, root, timeout):
        (out,) = outs
        flat = torch.zeros((self.size, out.numel()), dtype=out.dtype, device=out.device)
        if self.rank == root:
            for r, t in enumerate(ins[0]):
                flat[r].copy_(t.reshape(-1))
        fut = self.cc.all_reduce(flat, ReduceOp.SUM if out.dtype != torch.bool else ReduceOp.MAX, timeout)
        return _done([fut], lambda: out.view(-1).copy_(flat[self.rank]))

    def reduce_scatter(self, outs, ins, op, timeout):
        (out,), (in_list,) = outs, ins
        flat = torch.cat([t.reshape(-1) for t in in_list])
        return _done([self.cc.reduce_scatter(out.view(-1), flat, op, timeout)])

    def _padded_all_to_all(self, out_chunks: list[torch.Tensor], in_chunks: list[torch.Tensor], timeout):
        """all_to_all of per-rank chunks of any sizes: every chunk padded to the group's largest."""
        longest = torch.tensor([max([c.numel() for c in in_chunks + out_chunks] + [0])], dtype=torch.int64,
                               device=in_chunks[0].device)
        self.cc.all_reduce(longest, ReduceOp.MAX, timeout).wait()
        width = int(longest.item())
        send = torch.zeros((self.size, width), dtype=in_chunks[0].dtype, device=in_chunks[0].device)
        for r, c in enumerate(in_chunks):
            send[r, : c.numel()].copy_(c.reshape(-1))
        recv = torch.empty_like(send)
        fut = self.cc.all_to_all(recv.view(-1), send.view(-1), timeout)

        def unpack():
            for r, c in enumerate(out_chunks):
                c.view(-1).copy_(recv[r, : c.numel()])

        return _done([fut], unpack)

    def alltoall_single(self, out, inp, out_splits, in_splits, timeout):
        if not out_splits and not in_splits:
            return _done([self.cc.all_to_all(out.view(-1), inp.reshape(-1), timeout)])
        def rows(t, splits):
            return list(t.split(splits or [t.shape[0] // self.size] * self.size))

        return self._padded_all_to_all(rows(out, out_splits), rows(inp, in_splits), timeout)

    def alltoall(self, outs, ins, timeout):
        return self._padded_all_to_all(list(outs), list(ins), timeout)

    def monitored_barrier(self, timeout, wait_all_ranks):
        self.cc.barrier(timeout).wait()

    def set_timeout(self, timeout):
        pass  # the runtime takes the timeout per call

    def shutdown(self):
        self.cc.close()

    def abort(self):
        self.cc.close()
