"""The c10d "neuron" backend: torch.distributed's collectives on neuron tensors.

``_C._PythonBackend`` (csrc/distributed) forwards every c10d Backend call here, under the GIL, from Python
(``dist.all_reduce``), the dispatcher (functional collectives) or C++ (DDP's reducer). Each call checks its
tensors, waits for earlier work queued on their devices' current streams (the transfer reads device memory
directly), hands the buffers to the transport and returns a ``_C._CollectiveWork``: asynchronous, with the
user's tensors as its result, their memory kept alive until the transfer is done, errors that name the
collective and the group, and ``wait()`` honouring the group's timeout.
"""

from __future__ import annotations

from datetime import timedelta

import torch
import torch.distributed as dist

from torchneuron import _C
from torchneuron._dynamo_opaque import opaque_methods

from . import reduce_ops
from .transport import Transport

# dtypes every transport carries (gloo's set; Neuron collectives add none that PyTorch users reach here).
DTYPES = frozenset({torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
                     torch.int32, torch.int64, torch.bool})

# How long destroy_process_group and interpreter exit wait for collectives still in flight (a peer that
# never answers) before leaving what they hold to the OS.
QUIESCE_TIMEOUT_S = 5.0

_DTYPE_NAMES = ", ".join(sorted(str(d).removeprefix("torch.") for d in DTYPES))


def _timeout(opts) -> timedelta | None:
    t = opts.timeout
    return None if t < timedelta(0) else t


@opaque_methods  # DDP calls them from inside compiled regions: never traced
class NeuronCollectives:
    def __init__(self, rank: int, size: int, transport: Transport, group_name: str, timeout: timedelta) -> None:
        self.rank, self.size, self.transport = rank, size, transport
        self.group_name = group_name
        self.where = (f"rank {rank} of {size}, process group {group_name!r}, timeout "
                       f"{timeout.total_seconds():g}s")
        self._buffer = transport.buffer
        self._coalesced: list | None = None  # Works issued between start_coalescing and end_coalescing
        self._contexts: dict[str, str] = {}

    # ---------------------------------------------------------------- helpers

    def _context(self, what: str) -> str:
        text = self._contexts.get(what)
        if text is None:
            text = self._contexts[what] = self._describe_failure(what)
        return text

    def _describe_failure(self, what: str) -> str:
        return (f"neuron process group: {what} failed ({self.where}; {self.transport.description}). A peer "
                "process that exited fails it at once, one that stopped calling collectives when the timeout passes")

    def _checked(self, what: str, tensors: list[torch.Tensor], role: str, dense_ok: bool = False) -> None:
        for i, t in enumerate(tensors):
            if not t.is_cpu and t.device.type != "neuron":
                raise ValueError(f"neuron process group: {what} got a tensor on {t.device} ({role} {i}); "
                                 "its tensors must be neuron tensors (or CPU tensors)")
            if t.layout != torch.strided:
                raise ValueError(f"neuron process group: {what} does not support {t.layout} tensors ({role} {i})")
            if t.dtype not in DTYPES:
                raise TypeError(f"neuron process group: {what} does not support {t.dtype} ({role} {i} on "
                                f"{t.device}, shape {tuple(t.shape)}); cast to one of {_DTYPE_NAMES} first")
            if not (t.is_contiguous() or (dense_ok and t.is_contiguous(memory_format=torch.channels_last))):
                raise ValueError(f"neuron process group: {what} needs contiguous tensors, as NCCL does: {role} {i} "
                                 f"on {t.device} has shape {tuple(t.shape)} and stride {t.stride()}; pass "
                                 "t.contiguous()")

    @staticmethod
    def _ready(*groups: list[torch.Tensor]) -> None:
        """The transfer reads device memory on the host: earlier work on the current streams must be done."""
        seen: set[int] = set()
        for tensors in groups:
            for t in tensors:
                index = t.get_device()  # -1 on the CPU; cheaper than t.device
                if index >= 0 and index not in seen:
                    seen.add(index)
                    _C._drain_current_stream(index)

    def _work(self, what: str, works: list, inputs: list[torch.Tensor], outputs: list[torch.Tensor],
              post: list | tuple = ()):
        work = _C._CollectiveWork(works, inputs, outputs, list(post), self._context(what), self.rank)
        if self._coalesced is not None:
            self._coalesced.append(work)
        return work

    # torch.distributed's _coalescing_manager(device=...): the collectives in between run as they are issued;
    # end_coalescing returns one Work for all of them.
    def start_coalescing(self) -> None:
        if self._coalesced is not None:
            raise RuntimeError("neuron process group: start_coalescing called twice without end_coalescing")
        self._coalesced = []

    def end_coalescing(self) -> dist.Work:
        works, self._coalesced = self._coalesced, None
        if works is None:
            raise RuntimeError("neuron process group: end_coalescing without start_coalescing")
        if not works:
            done = torch.futures.Future()
            done.set_result([])
            return torch._C._distributed_c10d._create_work_from_future(done)
        return _C._CollectiveWork(works, [], [t for w in works for t in w.result()], [],
                                  self._context("coalesced collectives"), self.rank)

    @staticmethod
    def _same_dtype(what: str, tensors: list[torch.Tensor]) -> None:
        if len(tensors) < 2:
            return
        dtypes = {t.dtype for t in tensors}
        if len(dtypes) > 1:
            raise TypeError(f"neuron process group: {what} needs tensors of one dtype, got "
                            f"{sorted(str(d) for d in dtypes)}")

    def _one_and_list(self, what: str, ones: list[torch.Tensor], one_role: str, lists: list[list[torch.Tensor]],
                      list_role: str) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The single tensor and the per-rank list of an all_gather / reduce_scatter, checked."""
        if len(ones) != 1 or len(lists) != 1:
            raise ValueError(f"neuron process group: {what} takes one {one_role} tensor and one {list_role} list per "
                             "process")
        one, lst = ones[0], lists[0]
        if len(lst) != self.size:
            raise ValueError(f"neuron process group: {what} needs {self.size} {list_role} tensors (one per rank), "
                             f"got {len(lst)}")
        self._checked(what, ones, one_role)
        self._checked(what, lst, list_role)
        self._same_dtype(what, [one, *lst])
        return one, lst

    def _divide(self, bufs: list[torch.Tensor], divisor: int | None) -> list:
        return [] if divisor is None else [(_C._POST_DIV, b, b, divisor) for b in bufs]

    def _staged(self, t: torch.Tensor, factor=None) -> tuple[torch.Tensor, torch.Tensor]:
        """A device copy of t (times factor, for PREMUL_SUM where the input must stay as it is), and its buffer."""
        staged = torch.empty_like(t)
        buf = self._buffer(staged)
        buf.copy_(self._buffer(t))
        if factor is not None:
            reduce_ops.scale(buf, factor, self._buffer)
        return staged, buf

    # ---------------------------------------------------------------- reductions

    def allreduce(self, tensors: list[torch.Tensor], opts) -> dist.Work:
        what = "all_reduce"
        self._checked(what, tensors, "tensor", dense_ok=True)
        self._same_dtype(what, tensors)
        plan = reduce_ops.plan(opts.reduceOp, tensors[0].dtype, self.size, what)
        self._ready(tensors)
        bufs = [self._buffer(t) for t in tensors]
        if plan.premul is not None:
            for b in bufs:
                reduce_ops.scale(b, plan.premul, self._buffer)
        work = self.transport.allreduce(bufs, plan.op, _timeout(opts))
        return self._work(what, [work], tensors, tensors, self._divide(bufs, plan.divisor))

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts) -> dist.Work:
        what = "all_reduce_coalesced"
        self._checked(what, tensors, "tensor", dense_ok=True)
        self._ready(tensors)
        works, post = [], []
        for t in tensors:
            plan = reduce_ops.plan(opts.reduceOp, t.dtype, self.size, what)
            buf = self._buffer(t)
            if plan.premul is not None:
                reduce_ops.scale(buf, plan.premul, self._buffer)
            works.append(self.transport.allreduce([buf], plan.op, _timeout(opts)))
            post += self._divide([buf], plan.divisor)
        return self._work(what, works, tensors, tensors, post)

    def reduce(self, tensors: list[torch.Tensor], opts) -> dist.Work:
        what = "reduce"
        self._checked(what, tensors, "tensor", dense_ok=True)
        self._same_dtype(what, tensors)
        plan = reduce_ops.plan(opts.reduceOp, tensors[0].dtype, self.size, what)
        root = opts.rootRank
        self._ready(tensors)
        bufs = [self._buffer(t) for t in tensors]
        keep, post = list(tensors), []
        if plan.premul is not None:  # non-root inputs must stay as they are
            staged = [self._staged(t, plan.premul) for t in tensors]
            keep += [s for s, _ in staged]
            send = [b for _, b in staged]
            if self.rank == root:
                post += [(_C._POST_COPY, dst, src, 1) for dst, src in zip(bufs, send)]
        else:
            send = bufs
        work = self.transport.reduce(send, plan.op, root, _timeout(opts))
        if self.rank == root:
            post += self._divide(bufs, plan.divisor)
        return self._work(what, [work], keep, tensors, post)

    def _reduce_scatter_premul(self, inputs: list[torch.Tensor], factor) -> tuple[list, list]:
        staged = [self._staged(t, factor) for t in inputs]
        return [s for s, _ in staged], [b for _, b in staged]

    def reduce_scatter(self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]], opts) -> dist.Work:
        what = "reduce_scatter"
        out, inputs = self._one_and_list(what, outputs, "output", input_lists, "input")
        plan = reduce_ops.plan(opts.reduceOp, out.dtype, self.size, what)
        self._ready(outputs, inputs)
        out_buf = self._buffer(out)
        keep = [*inputs]
        if plan.premul is not None:
            staged, in_bufs = self._reduce_scatter_premul(inputs, plan.premul)
            keep += staged
        else:
            in_bufs = [self._buffer(t) for t in inputs]
        if all(t.shape == out.shape for t in inputs):
            works = [self.transport.reduce_scatter([out_buf], [in_bufs], plan.op, _timeout(opts))]
            post = self._divide([out_buf], plan.divisor)
        else:
            # Uneven shards (NCCL allows them): one reduce per rank, into staging copies of the inputs (a reduce
            # may use its buffer as scratch space), the own shard copied out at the end.
            if plan.premul is None:
                staged, in_bufs = self._reduce_scatter_premul(inputs, None)
                keep += staged
            if in_bufs[self.rank].numel() != out.numel():
                raise ValueError(f"neuron process group: {what} output has {out.numel()} elements but this rank's "
                                 f"input shard has {in_bufs[self.rank].numel()}")
            works = [self.transport.reduce([b], plan.op, r, _timeout(opts)) for r, b in enumerate(in_bufs)]
            post = [(_C._POST_COPY, out_buf, in_bufs[self.rank].view(out.shape), 1)]
            post += self._divide([out_buf], plan.divisor)
        return self._work(what, works, keep, outputs, post)

    def _reduce_scatter_base(self, output: torch.Tensor, input: torch.Tensor, opts) -> dist.Work:
        what = "reduce_scatter_tensor"
        self._checked(what, [output], "output")
        self._checked(what, [input], "input")
        self._same_dtype(what, [output, input])
        if input.numel() != self.size * output.numel():
            raise ValueError(f"neuron process group: {what} input has {input.numel()} elements, expected "
                             f"world size ({self.size}) x output ({output.numel()}) = {self.size * output.numel()}")
        plan = reduce_ops.plan(opts.reduceOp, output.dtype, self.size, what)
        self._ready([output, input])
        out_buf = self._buffer(output).view(-1)
        keep = [input]
        if plan.premul is not None:
            staged, in_buf = self._staged(input, plan.premul)
            keep.append(staged)
        else:
            in_buf = self._buffer(input)
        work = self.transport.reduce_scatter_into(out_buf, in_buf.view(-1), plan.op, _timeout(opts))
        return self._work(what, [work], keep, [output], self._divide([out_buf], plan.divisor))

    def reduce_scatter_tensor_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
                                        opts) -> dist.Work:
        works = [self._reduce_scatter_base(o, i, opts) for o, i in zip(outputs, inputs, strict=True)]
        return self._work("reduce_scatter_tensor_coalesced", works, inputs, outputs)

    # ---------------------------------------------------------------- data movement

    def broadcast(self, tensors: list[torch.Tensor], opts) -> dist.Work:
        what = "broadcast"
        self._checked(what, tensors, "tensor", dense_ok=True)
        self._ready(tensors)
        work = self.transport.broadcast([self._buffer(t) for t in tensors], opts.rootRank, _timeout(opts))
        return self._work(what, [work], tensors, tensors)

    def allgather(self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts) -> dist.Work:
        what = "all_gather"
        inp, outs = self._one_and_list(what, inputs, "input", output_lists, "output")
        self._ready(inputs, outs)
        in_buf, out_bufs = self._buffer(inp), [self._buffer(o) for o in outs]
        if all(o.shape == inp.shape for o in outs):
            works = [self.transport.allgather([out_bufs], [in_buf], _timeout(opts))]
        else:
            # Uneven shapes (NCCL allows them): each rank broadcasts its input into everyone's slot for it.
            if outs[self.rank].numel() != inp.numel():
                raise ValueError(f"neuron process group: {what} output {self.rank} has {outs[self.rank].numel()} "
                                 f"elements but this rank's input has {inp.numel()}")
            out_bufs[self.rank].view(-1).copy_(in_buf.view(-1))
            works = [self.transport.broadcast([b], r, _timeout(opts)) for r, b in enumerate(out_bufs)]
        return self._work(what, works, inputs, outs)

    def _allgather_base(self, output: torch.Tensor, input: torch.Tensor, opts) -> dist.Work:
        what = "all_gather_into_tensor"
        self._checked(what, [output], "output")
        self._checked(what, [input], "input")
        self._same_dtype(what, [output, input])
        if output.numel() != self.size * input.numel():
            raise ValueError(f"neuron process group: {what} output has {output.numel()} elements, expected world "
                             f"size ({self.size}) x input ({input.numel()}) = {self.size * input.numel()}")
        self._ready([output, input])
        work = self.transport.allgather_into(self._buffer(output).view(-1), self._buffer(input).view(-1),
                                             _timeout(opts))
        return self._work(what, [work], [input], [output])

    def allgather_coalesced(self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor],
                            opts) -> dist.Work:
        # output_lists[r][i]: rank r's inputs[i]
        works = [self.allgather([[output_lists[r][i] for r in range(self.size)]], [t], opts)
                 for i, t in enumerate(inputs)]
        return self._work("all_gather_coalesced", works, inputs, [t for lst in output_lists for t in lst])

    def allgather_into_tensor_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
                                        opts) -> dist.Work:
        works = [self._allgather_base(o, i, opts) for o, i in zip(outputs, inputs, strict=True)]
        return self._work("all_gather_into_tensor_coalesced", works, inputs, outputs)

    def gather(self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts) -> dist.Work:
        what = "gather"
        root = opts.rootRank
        outs = output_lists[0] if output_lists else []
        if self.rank == root and len(outs) != self.size:
            raise ValueError(f"neuron process group: {what} needs {self.size} output tensors on the root rank "
                             f"{root}, got {len(outs)}")
        self._checked(what, inputs, "input")
        self._checked(what, outs, "output")
        self._ready(inputs, outs)
        out_bufs = [[self._buffer(o) for o in outs]] if self.rank == root else []
        work = self.transport.gather(out_bufs, [self._buffer(t) for t in inputs], root, _timeout(opts))
        return self._work(what, [work], inputs, outs)

    def scatter(self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]], opts) -> dist.Work:
        what = "scatter"
        root = opts.rootRank
        ins = input_lists[0] if input_lists else []
        if self.rank == root and len(ins) != self.size:
            raise ValueError(f"neuron process group: {what} needs {self.size} input tensors on the root rank "
                             f"{root}, got {len(ins)}")
        self._checked(what, outputs, "output")
        self._checked(what, ins, "input")
        self._ready(outputs, ins)
        in_bufs = [[self._buffer(t) for t in ins]] if self.rank == root else []
        work = self.transport.scatter([self._buffer(o) for o in outputs], in_bufs, root, _timeout(opts))
        return self._work(what, [work], ins, outputs)

    def alltoall_base(self, output: torch.Tensor, input: torch.Tensor, output_splits: list[int],
                      input_splits: list[int], opts) -> dist.Work:
        what = "all_to_all_single"
        self._checked(what, [output], "output")
        self._checked(what, [input], "input")
        self._same_dtype(what, [output, input])
        self._ready([output, input])
        work = self.transport.alltoall_single(self._buffer(output), self._buffer(input), list(output_splits),
                                              list(input_splits), _timeout(opts))
        return self._work(what, [work], [input], [output])

    def alltoall(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts) -> dist.Work:
        what = "all_to_all"
        if len(outputs) != self.size or len(inputs) != self.size:
            raise ValueError(f"neuron process group: {what} needs {self.size} input and output tensors (one per "
                             f"rank), got {len(inputs)} and {len(outputs)}")
        self._checked(what, outputs, "output")
        self._checked(what, inputs, "input")
        self._same_dtype(what, [*outputs, *inputs])
        self._ready(outputs, inputs)
        if all(t.shape == inputs[0].shape for t in [*outputs, *inputs]):
            work = self.transport.alltoall([self._buffer(o) for o in outputs], [self._buffer(t) for t in inputs],
                                           _timeout(opts))
            return self._work(what, [work], inputs, outputs)
        # Tensors of different sizes (NCCL allows them): one all_to_all_single over packed staging buffers.
        device = inputs[0].device
        send = torch.empty(sum(t.numel() for t in inputs), dtype=inputs[0].dtype, device=device)
        recv = torch.empty(sum(o.numel() for o in outputs), dtype=outputs[0].dtype, device=device)
        send_buf, recv_buf = self._buffer(send), self._buffer(recv)
        torch.cat([self._buffer(t).reshape(-1) for t in inputs], out=send_buf)
        out_splits, in_splits = [o.numel() for o in outputs], [t.numel() for t in inputs]
        work = self.transport.alltoall_single(recv_buf, send_buf, out_splits, in_splits, _timeout(opts))
        post = [(_C._POST_COPY, self._buffer(o).view(-1), piece, 1)
                for o, piece in zip(outputs, recv_buf.split(out_splits))]
        return self._work(what, [work], [*inputs, send, recv], outputs, post)

    # ---------------------------------------------------------------- point to point, barriers

    def send(self, tensors: list[torch.Tensor], dst: int, tag: int) -> dist.Work:
        self._checked("send", tensors, "tensor", dense_ok=True)
        self._ready(tensors)
        work = self.transport.send([self._buffer(t) for t in tensors], dst, tag)
        return self._work(f"send to rank {dst}", [work], tensors, tensors)

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int) -> dist.Work:
        self._checked("recv", tensors, "tensor", dense_ok=True)
        self._ready(tensors)
        work = self.transport.recv([self._buffer(t) for t in tensors], src, tag)
        return self._work(f"recv from rank {src}", [work], tensors, tensors)

    def recv_anysource(self, tensors: list[torch.Tensor], tag: int) -> dist.Work:
        self._checked("recv", tensors, "tensor", dense_ok=True)
        self._ready(tensors)
        work = self.transport.recv_anysource([self._buffer(t) for t in tensors], tag)
        return self._work("recv from any rank", [work], tensors, tensors)

    def barrier(self, opts) -> dist.Work:
        # As NCCL's barrier: work already queued on this process's device comes first.
        device = torch.neuron.current_device()
        _C._drain_current_stream(device)
        return self._work("barrier", [self.transport.barrier(_timeout(opts))], [], [])

    def monitored_barrier(self, opts, wait_all_ranks: bool) -> None:
        self.transport.monitored_barrier(_timeout(opts), wait_all_ranks)

    def set_timeout(self, timeout: timedelta) -> None:
        self.transport.set_timeout(timeout)

    def shutdown(self) -> None:
        _C._quiesce_collectives(QUIESCE_TIMEOUT_S)
        self.transport.shutdown()

    def abort(self) -> None:
        self.transport.abort()
