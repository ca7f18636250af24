"""Every collective of the neuron process group, on f32, bf16 and i64, against a CPU reference.

Each rank's input is a function of (case, rank), so every rank can compute every other rank's input and the
expected result on the CPU. Run under torchrun; argv[1] is how the group is created.
"""

from __future__ import annotations

import functools
import itertools
import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as fc
from _report import Checks
from torch.distributed import ReduceOp

DTYPES = [torch.float32, torch.bfloat16, torch.int64]
NEURON = torch.device("neuron")
_case = itertools.count()


def data(case: int, rank: int, shape, dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(1000 * case + rank)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-40, 40, shape, generator=g, dtype=dtype)


def close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.device.type == "neuron", actual.device
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape,
                                                                             expected.dtype, expected.shape)
    tol = {"rtol": 2e-2, "atol": 5e-2} if expected.dtype == torch.bfloat16 else {}
    torch.testing.assert_close(actual.cpu(), expected, **tol)


def reduce_ref(xs: list[torch.Tensor], op, factors=None) -> torch.Tensor:
    n = len(xs)
    if op == "avg":
        s = functools.reduce(torch.add, [x.double() for x in xs])
        return (s / n if xs[0].dtype.is_floating_point else torch.div(s, n, rounding_mode="trunc")).to(xs[0].dtype)
    if op == "premul":
        return functools.reduce(torch.add, [x.double() * f for x, f in zip(xs, factors)]).to(xs[0].dtype)
    fn = {"sum": torch.add, "product": torch.mul, "min": torch.minimum, "max": torch.maximum,
          "band": torch.bitwise_and, "bor": torch.bitwise_or, "bxor": torch.bitwise_xor}[op]
    if op in ("sum", "product") and xs[0].dtype.is_floating_point:
        return functools.reduce(fn, [x.double() for x in xs]).to(xs[0].dtype)
    return functools.reduce(fn, xs)


def c10d_op(op: str, rank: int):
    if op == "premul":
        return dist._make_nccl_premul_sum(0.5 + rank)
    return getattr(ReduceOp, op.upper())


def ops_for(dtype):
    ops = ["sum", "avg", "product", "min", "max"]
    return ops + (["band", "bor", "bxor"] if not dtype.is_floating_point else ["premul"])


class Suite:
    def __init__(self, group=None) -> None:
        self.group = group
        self.rank = dist.get_rank(group)
        self.n = dist.get_world_size(group)
        self.checks = Checks()
        self.factors = [0.5 + r for r in range(self.n)]

    def inputs(self, shape, dtype):
        case = next(_case)
        xs = [data(case, r, shape, dtype) for r in range(self.n)]
        return xs, xs[self.rank].to(NEURON)

    # ------------------------------------------------------------ reductions

    def all_reduce(self, dtype, op):
        xs, t = self.inputs((5, 3), dtype)
        dist.all_reduce(t, op=c10d_op(op, self.rank), group=self.group)
        close(t, reduce_ref(xs, op, self.factors))

    def all_reduce_tensor_premul(self, dtype):
        xs, t = self.inputs((6,), dtype)
        factor = torch.tensor([0.5 + self.rank], device=NEURON, dtype=torch.float32)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor), group=self.group)
        close(t, reduce_ref(xs, "premul", self.factors))

    def all_reduce_async(self, dtype):
        xs, t = self.inputs((1000,), dtype)
        work = dist.all_reduce(t, async_op=True, group=self.group)
        assert work.wait() is True and work.is_completed()
        value = work.get_future().value()
        assert value[0].device.type == "neuron" and value[0].data_ptr() == t.data_ptr()
        close(t, reduce_ref(xs, "sum"))

    def reduce(self, dtype, op):
        xs, t = self.inputs((4, 2), dtype)
        dist.reduce(t, dst=1 % self.n, op=c10d_op(op, self.rank), group=self.group)
        if self.rank == 1 % self.n:
            close(t, reduce_ref(xs, op, self.factors))
        elif op == "premul":  # the input stays as it was on non-root ranks (PREMUL_SUM stages a copy)
            close(t, xs[self.rank])

    def reduce_scatter(self, dtype, op):
        case = next(_case)
        ins = [[data(case, r, (3, 2), dtype) for _ in range(self.n)] for r in range(self.n)]
        for r in range(self.n):  # every rank's list differs
            ins[r] = [x + i for i, x in enumerate(ins[r])]
        out = torch.empty((3, 2), dtype=dtype, device=NEURON)
        mine = [x.to(NEURON) for x in ins[self.rank]]
        dist.reduce_scatter(out, mine, op=c10d_op(op, self.rank), group=self.group)
        close(out, reduce_ref([ins[r][self.rank] for r in range(self.n)], op, self.factors))
        for x, ref in zip(mine, ins[self.rank]):  # inputs untouched
            close(x, ref)

    def reduce_scatter_uneven(self, dtype):
        case = next(_case)
        sizes = [r + 1 for r in range(self.n)]
        ins = [[data(case, r, (s,), dtype) for s in sizes] for r in range(self.n)]
        out = torch.empty((sizes[self.rank],), dtype=dtype, device=NEURON)
        dist.reduce_scatter(out, [x.to(NEURON) for x in ins[self.rank]], group=self.group)
        close(out, reduce_ref([ins[r][self.rank] for r in range(self.n)], "sum"))

    def reduce_scatter_tensor(self, dtype, op):
        xs, t = self.inputs((self.n * 4, 3), dtype)
        out = torch.empty((4, 3), dtype=dtype, device=NEURON)
        dist.reduce_scatter_tensor(out, t, op=c10d_op(op, self.rank), group=self.group)
        close(out, reduce_ref([x[4 * self.rank: 4 * self.rank + 4] for x in xs], op, self.factors))
        close(t, xs[self.rank])

    def coalesced(self, dtype):
        xs, a = self.inputs((self.n * 2,), dtype)
        ys, b = self.inputs((self.n * 3,), dtype)
        outs = [torch.empty(self.n * 2 * self.n, dtype=dtype, device=NEURON),
                torch.empty(self.n * 3 * self.n, dtype=dtype, device=NEURON)]
        with dist._coalescing_manager(group=self.group, device=NEURON):
            dist.all_gather_into_tensor(outs[0], a, group=self.group)
            dist.all_gather_into_tensor(outs[1], b, group=self.group)
        close(outs[0], torch.cat(xs))
        close(outs[1], torch.cat(ys))
        rs = [torch.empty(2, dtype=dtype, device=NEURON), torch.empty(3, dtype=dtype, device=NEURON)]
        with dist._coalescing_manager(group=self.group, device=NEURON):
            dist.reduce_scatter_tensor(rs[0], a, group=self.group)
            dist.reduce_scatter_tensor(rs[1], b, group=self.group)
        close(rs[0], reduce_ref([x[2 * self.rank: 2 * self.rank + 2] for x in xs], "sum"))
        close(rs[1], reduce_ref([y[3 * self.rank: 3 * self.rank + 3] for y in ys], "sum"))
        zs, c = self.inputs((4,), dtype)
        a2 = a.clone()
        with dist._coalescing_manager(group=self.group, device=NEURON):
            dist.all_reduce(a2, group=self.group)
            dist.all_reduce(c, group=self.group)
        close(a2, reduce_ref(xs, "sum"))
        close(c, reduce_ref(zs, "sum"))

    # ------------------------------------------------------------ data movement

    def broadcast(self, dtype):
        xs, t = self.inputs((7,), dtype)
        dist.broadcast(t, src=self.n - 1, group=self.group)
        close(t, xs[self.n - 1])

    def all_gather(self, dtype):
        xs, t = self.inputs((2, 3), dtype)
        outs = [torch.empty((2, 3), dtype=dtype, device=NEURON) for _ in range(self.n)]
        dist.all_gather(outs, t, group=self.group)
        for o, x in zip(outs, xs):
            close(o, x)

    def all_gather_uneven(self, dtype):
        case = next(_case)
        xs = [data(case, r, (r + 1, 2), dtype) for r in range(self.n)]
        outs = [torch.empty((r + 1, 2), dtype=dtype, device=NEURON) for r in range(self.n)]
        dist.all_gather(outs, xs[self.rank].to(NEURON), group=self.group)
        for o, x in zip(outs, xs):
            close(o, x)

    def all_gather_into_tensor(self, dtype):
        xs, t = self.inputs((3,), dtype)
        flat = torch.empty((3 * self.n,), dtype=dtype, device=NEURON)
        dist.all_gather_into_tensor(flat, t, group=self.group)
        close(flat, torch.cat(xs))
        stacked = torch.empty((self.n, 3), dtype=dtype, device=NEURON)
        dist.all_gather_into_tensor(stacked, t, group=self.group)
        close(stacked, torch.stack(xs))

    def all_gather_coalesced(self, dtype):
        xs, a = self.inputs((2,), dtype)
        ys, b = self.inputs((3, 1), dtype)
        outs = [[torch.empty((2,), dtype=dtype, device=NEURON), torch.empty((3, 1), dtype=dtype, device=NEURON)]
                for _ in range(self.n)]
        dist.all_gather_coalesced(outs, [a, b], group=self.group)
        for r in range(self.n):
            close(outs[r][0], xs[r])
            close(outs[r][1], ys[r])

    def all_to_all_single(self, dtype):
        xs, t = self.inputs((self.n * 2, 3), dtype)
        out = torch.empty_like(t)
        dist.all_to_all_single(out, t, group=self.group)
        close(out, torch.cat([x[2 * self.rank: 2 * self.rank + 2] for x in xs]))

    def all_to_all_single_splits(self, dtype):
        # rank r sends (r + s + 1) rows to rank s
        case = next(_case)
        send = [[r + s + 1 for s in range(self.n)] for r in range(self.n)]
        xs = [data(case, r, (sum(send[r]), 2), dtype) for r in range(self.n)]
        recv = [send[r][self.rank] for r in range(self.n)]
        out = torch.empty((sum(recv), 2), dtype=dtype, device=NEURON)
        dist.all_to_all_single(out, xs[self.rank].to(NEURON), recv, send[self.rank], group=self.group)
        pieces = [x.split(send[r])[self.rank] for r, x in enumerate(xs)]
        close(out, torch.cat(pieces))

    def all_to_all(self, dtype):
        case = next(_case)
        xs = [[data(case, r * self.n + s, (s + 1,), dtype) for s in range(self.n)] for r in range(self.n)]
        outs = [torch.empty((self.rank + 1,), dtype=dtype, device=NEURON) for _ in range(self.n)]
        dist.all_to_all(outs, [x.to(NEURON) for x in xs[self.rank]], group=self.group)
        for r, o in enumerate(outs):
            close(o, xs[r][self.rank])

    def gather_scatter(self, dtype):
        xs, t = self.inputs((4,), dtype)
        root = self.n - 1
        outs = [torch.empty((4,), dtype=dtype, device=NEURON) for _ in range(self.n)] if self.rank == root else None
        dist.gather(t, outs, dst=root, group=self.group)
        if self.rank == root:
            for o, x in zip(outs, xs):
                close(o, x)
        case = next(_case)
        chunks = [data(case, r, (2, 2), dtype) for r in range(self.n)]
        got = torch.empty((2, 2), dtype=dtype, device=NEURON)
        dist.scatter(got, [c.to(NEURON) for c in chunks] if self.rank == 0 else None, src=0, group=self.group)
        close(got, chunks[self.rank])

    def send_recv(self, dtype):
        xs, t = self.inputs((5,), dtype)
        peer_next, peer_prev = (self.rank + 1) % self.n, (self.rank - 1) % self.n
        got = torch.empty_like(t)
        ops = [dist.P2POp(dist.isend, t, peer_next, self.group), dist.P2POp(dist.irecv, got, peer_prev, self.group)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        close(got, xs[peer_prev])
        if self.rank == 0:
            dist.send(t, 1, group=self.group)
        elif self.rank == 1:
            got = torch.empty_like(t)
            dist.recv(got, 0, group=self.group)
            close(got, xs[0])

    # ------------------------------------------------------------ the rest of the surface

    def barrier_and_objects(self):
        dist.barrier(group=self.group)
        objs = [None] * self.n
        dist.all_gather_object(objs, {"rank": self.rank, "tag": "x" * self.rank}, group=self.group)
        assert objs == [{"rank": r, "tag": "x" * r} for r in range(self.n)], objs
        lst = [{"from": self.rank}]
        dist.broadcast_object_list(lst, src=0, group=self.group)
        assert lst == [{"from": 0}], lst

    def functional(self, dtype):
        xs, t = self.inputs((self.n * 2,), dtype)
        y = fc.all_reduce(t, "sum", self.group or dist.group.WORLD)
        close(fc.wait_tensor(y), reduce_ref(xs, "sum"))
        g = fc.all_gather_tensor(t, 0, self.group or dist.group.WORLD)
        close(g, torch.cat(xs))
        rs = fc.reduce_scatter_tensor(t, "avg", 0, self.group or dist.group.WORLD)
        close(rs, reduce_ref([x[2 * self.rank: 2 * self.rank + 2] for x in xs], "avg"))
        a2a = fc.all_to_all_single(t, None, None, self.group or dist.group.WORLD)
        close(a2a, torch.cat([x[2 * self.rank: 2 * self.rank + 2] for x in xs]))

    def stream_order(self):
        # The input is produced by an async copy on a side stream and reduced on that stream; the result is
        # read on the default stream after block_current_stream (which does not block the host).
        pinned = torch.full((1 << 16,), float(self.rank + 1)).pin_memory()
        side = torch.neuron.Stream()
        with torch.neuron.stream(side):
            t = pinned.to(NEURON, non_blocking=True)
            work = dist.all_reduce(t, async_op=True, group=self.group)
            work.block_current_stream()
            t2 = t * 2
        torch.neuron.current_stream().wait_stream(side)
        expected = 2.0 * sum(r + 1 for r in range(self.n))
        assert torch.equal(t2.cpu(), torch.full((1 << 16,), expected)), t2.cpu()[:4]

    def errors(self):
        def raises(exc, text, fn):
            try:
                fn()
            except exc as e:
                assert text in str(e), str(e)
                return
            raise AssertionError(f"no {exc.__name__}")

        x = torch.ones(4, 4, device=NEURON)
        raises(ValueError, "needs contiguous tensors", lambda: dist.all_reduce(x.t(), group=self.group))
        f8 = torch.zeros(4, device=NEURON).to(torch.float8_e4m3fn)
        raises(TypeError, "does not support torch.float8_e4m3fn", lambda: dist.all_reduce(f8, group=self.group))
        raises(ValueError, "needs an integer or bool tensor",
               lambda: dist.all_reduce(torch.ones(2, device=NEURON), op=ReduceOp.BAND, group=self.group))
        raises(ValueError, "expected world size",
               lambda: dist.all_gather_into_tensor(torch.empty(3, device=NEURON), torch.ones(2, device=NEURON),
                                                   group=self.group))

    def run(self):
        c = self.checks
        for dtype in DTYPES:
            for op in ops_for(dtype):
                c.run(f"all_reduce {op} {dtype}", self.all_reduce, dtype, op)
            for op in ("sum", "avg") + (("premul",) if dtype.is_floating_point else ()):
                c.run(f"reduce {op} {dtype}", self.reduce, dtype, op)
            for op in ("sum", "avg", "max") + (("premul",) if dtype.is_floating_point else ()):
                c.run(f"reduce_scatter {op} {dtype}", self.reduce_scatter, dtype, op)
                c.run(f"reduce_scatter_tensor {op} {dtype}", self.reduce_scatter_tensor, dtype, op)
            for name in ("all_reduce_async", "reduce_scatter_uneven", "coalesced", "broadcast", "all_gather",
                         "all_gather_uneven", "all_gather_into_tensor", "all_gather_coalesced", "all_to_all_single",
                         "all_to_all_single_splits", "all_to_all", "gather_scatter", "send_recv", "functional"):
                c.run(f"{name} {dtype}", getattr(self, name), dtype)
        c.run("all_reduce tensor premul", self.all_reduce_tensor_premul, torch.float32)
        c.run("barrier and objects", self.barrier_and_objects)
        c.run("stream order", self.stream_order)
        c.run("errors", self.errors)
        return c


def main() -> None:
    how = sys.argv[1] if len(sys.argv) > 1 else "neuron"
    if how == "default":
        dist.init_process_group()
    else:
        dist.init_process_group(how)
    checks = Suite().run()
    checks.values["backend"] = dist.get_backend()
    checks.values["device"] = torch.neuron.current_device()
    # The mixed group: CPU tensors go to gloo, neuron tensors to the neuron backend.
    mixed = dist.new_group(backend="cpu:gloo,neuron:neuron")
    sub = Suite(mixed)
    sub.checks = checks
    checks.run("mixed: neuron all_reduce", sub.all_reduce, torch.float32, "sum")
    cpu = torch.full((3,), float(dist.get_rank()))
    checks.run("mixed: cpu all_reduce", lambda: dist.all_reduce(cpu, group=mixed))
    checks.values["mixed cpu result"] = cpu.tolist()
    checks.values["mixed cpu backend"] = type(mixed._get_backend(torch.device("cpu"))).__name__
    checks.values["mixed neuron backend"] = type(mixed._get_backend(torch.device("neuron"))).__name__
    checks.write()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
