"""Single-op lowering for eager execution: one ATen op call → a compiled program, cached by signature.

The signature of a call is (op, per argument: ``(shape, dtype)`` for tensors, the Python type for scalars
that become tensors, the value for everything else). Two rules keep the hit rate high:

- *scalars become tensors*: a ``Scalar`` argument (``x * 0.5``, ``x.add_(1)``, ``clamp(x, min=0)``) is passed
  as a 0-d tensor argument when the op has an overload taking a ``Tensor`` there (``mul.Scalar`` →
  ``mul.Tensor``), so the IR does not depend on the value. Float scalars become default-dtype tensors, ints
  int64 and bools bool — which promote like PyTorch's wrapped numbers; where the result dtype could still
  differ (all-0-d calls), the result is cast to the dtype PyTorch's own meta function gives.
- *strides stay out of the IR*: every tensor argument is a dense row-major array; non-contiguous inputs are
  made contiguous on the host before the call, so a transposed and a contiguous input share one program.

float64 is not handled here: the device layer applies the float64 rule (``torchneuron/fp64_rule.py``) before
it calls this executor, exactly as before a host kernel, so an op arrives with float32 stand-ins for its
float64 tensors (or, for data movement, with the float64 tensors themselves, which the program moves as they
are). Called directly on CPU tensors, a program computes in the dtypes it is given.
In-place and ``out=`` ops are functionalized: the program returns the new values and they are written into
the given tensors, which are returned as the schema says.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import torch

from .. import _C
from ..lowering.coverage import tensor_twin
from ..lowering.errors import LoweringError, Unsupported, UnsupportedKind
from ..lowering.passes import OutputLayout
from . import host_bridge as dev

_Tensor = torch.Tensor
_CPU = torch.device("cpu")


# Ops that only read a result on the host and raise (LAPACK ``info`` checks): runtime calls, like a scalar
# read, on a Trn host as here. They are never compiled.
RUNTIME_CHECKS = frozenset({"aten::_linalg_check_errors"})


def _equal(a, b):
    if a.shape != b.shape:  # static: a different shape is never equal
        return torch.zeros((), dtype=torch.bool)
    return torch.all(torch.eq(a, b))


def _allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    # isclose's own decomposition updates a mask in place, which functionalization leaves behind
    a, b = torch.broadcast_tensors(a, b)
    finite = torch.isfinite(a) & torch.isfinite(b)
    close = (a == b) | (finite & (torch.abs(a - b) <= atol + rtol * torch.abs(b)))
    if equal_nan:
        close = close | (torch.isnan(a) & torch.isnan(b))
    return torch.all(close)


# Ops returning a Python bool/number: the program computes it as a 0-d tensor and the runtime reads it back
# (one scalar read, as ``.item()`` on a Trn host).
_SCALAR_SURROGATES = {"aten::equal": _equal, "aten::allclose": _allclose}


# --------------------------------------------------------------------------------------------- op analysis
class OverloadFacts:
    """What the executor needs to know about an overload, computed once per op."""

    def __init__(self, op: torch._ops.OpOverload):
        schema = op._schema
        self.op = op
        self.name = op.name()
        self.arg_names = [a.name for a in schema.arguments]
        self.kwarg_only = {a.name for a in schema.arguments if a.kwarg_only}
        self.defaults = {a.name: a.default_value for a in schema.arguments if a.has_default_value()}
        self.returns_view = (any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)
                             or torch.Tag.inplace_view in op.tags)
        self.tensor_returns = all(str(r.type) in ("Tensor", "List[Tensor]") for r in schema.returns)
        self.random = torch.Tag.nondeterministic_seeded in op.tags
        # Seeded only through their dropout (the fused attention kernels): deterministic at dropout_p=0.
        self.dropout_index = (self.arg_names.index("dropout_p") if self.random and "dropout_p" in self.arg_names
                              else None)
        # return i aliases (writes) argument name -> returned as the caller's tensor
        self.write_returns: list[str | None] = []
        for r in schema.returns:
            target = None
            if r.alias_info is not None and r.alias_info.is_write:
                for a in schema.arguments:
                    if a.alias_info is not None and a.alias_info.before_set == r.alias_info.before_set:
                        target = a.name
            self.write_returns.append(target)
        self.twin, self.converted = tensor_twin(op)
        self.surrogate = _SCALAR_SURROGATES.get(self.name)
        # Tensor arguments that may arrive as Python numbers (the device layer unwraps PyTorch's wrapped
        # numbers, e.g. ``x * 2.0`` → mul.Tensor(x, 2.0)): passed as 0-d tensor arguments as well.
        self.tensor_args = frozenset(a.name for a in schema.arguments if str(a.type) in ("Tensor", "Optional[Tensor]"))

    def unsupported(self, values: list | None = None) -> Unsupported | None:
        """Why this call cannot have a program, or None."""
        if self.returns_view:
            return Unsupported(self.name, UnsupportedKind.VIEW, "view")
        if self.name in RUNTIME_CHECKS:
            return Unsupported(self.name, UnsupportedKind.RUNTIME_CHECK, "runtime check (reads a result on the host)")
        if not self.tensor_returns and self.surrogate is None:
            return Unsupported(self.name, UnsupportedKind.NON_TENSOR_RESULT, "returns a non-tensor value")
        if self.random and not (self.dropout_index is not None and values is not None
                                and values[self.dropout_index] == 0.0):
            return Unsupported(self.name, UnsupportedKind.RANDOM,
                               "random op (runs on the host generator; no StableHLO RNG lowering)")
        return None


_FACTS: dict[int, OverloadFacts] = {}  # by id: OpOverload hashing is a Python-level call on the hot path


def overload_facts(op: torch._ops.OpOverload) -> OverloadFacts:
    info = _FACTS.get(id(op))
    if info is None or info.op is not op:
        info = _FACTS[id(op)] = OverloadFacts(op)
    return info


# ------------------------------------------------------------------------------------------- signatures
def _scalar_dtype(v: Any, wide: bool) -> torch.dtype:
    """The dtype a Python scalar travels in. Next to float64 data (the ops the float64 rule leaves as they
    are: ``masked_fill(x, m, 1/3)``) it keeps its full precision; otherwise it is a default-dtype number,
    which promotes like PyTorch's wrapped numbers either way (a 0-d tensor never widens a result)."""
    if isinstance(v, bool):
        return torch.bool
    if isinstance(v, int):
        return torch.int64
    if isinstance(v, complex):
        return torch.complex128 if wide else torch.complex64
    return torch.float64 if wide else torch.get_default_dtype()


def bind(info: OverloadFacts, args: tuple, kwargs: dict) -> list[Any]:
    """Argument values in schema order (defaults filled in)."""
    values = list(args)
    names = info.arg_names
    for name in names[len(values):]:
        if name in kwargs:
            values.append(kwargs[name])
        elif name in info.defaults:
            values.append(info.defaults[name])
        else:
            values.append(None)
    return values


def signature(info: OverloadFacts, values: list[Any]) -> tuple[tuple, list[Any]]:
    """(hashable key, flat dynamic inputs: tensors and converted scalars in order)."""
    key: list[Any] = [info.op]
    dyn: list[Any] = []
    converted = info.converted
    for name, v in zip(info.arg_names, values):
        if isinstance(v, _Tensor):
            key.append((v.shape, v.dtype))
            dyn.append(v)
        elif isinstance(v, (int, float, bool, complex)) and (name in converted or name in info.tensor_args):
            key.append(type(v))
            dyn.append(v)
        elif isinstance(v, (list, tuple)):
            sub = []
            for e in v:
                if isinstance(e, _Tensor):
                    sub.append((e.shape, e.dtype))
                    dyn.append(e)
                else:
                    sub.append(e)
            key.append(tuple(sub))
        else:
            key.append(v)
    return tuple(key), dyn


# ---------------------------------------------------------------------------------------------- programs
class OpProgram:
    """A compiled single-op program and how to feed it and unpack its results."""

    def __init__(self, info: OverloadFacts, values: list[Any], dyn: list[Any], key: tuple | None = None):
        from . import op_index

        self.info = info
        index_key = op_index.index_key(key) if key is not None else None
        record = op_index.load(index_key) if index_key is not None else None
        if record is not None:
            self.from_index = True
            self.kinds, self.stablehlo, self.mutated = record["kinds"], record["stablehlo"], record["mutated"]
            self.layout = OutputLayout(record["spec"], record["slots"])
            self.casts, self.n_user, self.constants = record["casts"], record["n_user"], []
            self._compile()
        else:
            self.from_index = False
            self._lower(info, values, dyn)
            if index_key is not None and not self.constants:
                blob = op_index.encode(self.stablehlo, self.kinds, self.mutated, self.layout.spec,
                                       self.layout.slots, self.casts, self.n_user)
                if blob is not None:
                    op_index.store(index_key, blob)
        self._finish(info)

    def _compile(self) -> None:
        from ..compiler import driver

        try:
            self.exe = driver.compile(self.stablehlo, target="sim", kind="eager")
        except driver.CompileError as e:
            raise Unsupported(self.info.name, UnsupportedKind.NOT_COMPILABLE, str(e)) from None

    def _lower(self, info: OverloadFacts, values: list[Any], dyn: list[Any]) -> None:
        from ..lowering.trace import trace

        use_twin = info.twin is not None and any(
            name in info.converted and not isinstance(v, _Tensor) and v is not None
            for name, v in zip(info.arg_names, values))
        target_op = info.twin if use_twin else info.op
        schema_op = target_op
        if info.surrogate is not None:
            target_op = info.surrogate
        # per dynamic input: ("t", None) for tensors, ("s", dtype) for converted scalars
        self.kinds: list[tuple[str, torch.dtype | None]] = []
        examples: list[torch.Tensor] = []
        wide = any(isinstance(v, _Tensor) and v.dtype in (torch.float64, torch.complex128) for v in dyn)
        for v in dyn:
            if isinstance(v, _Tensor):
                self.kinds.append(("t", None))
                examples.append(torch.empty(tuple(v.shape), dtype=v.dtype))
            else:
                dt = _scalar_dtype(v, wide)
                self.kinds.append(("s", dt))
                examples.append(torch.tensor(v, dtype=dt))
        template = list(values)
        names = info.arg_names
        kwarg_only = {a.name for a in schema_op._schema.arguments if a.kwarg_only}  # the twin may differ

        def call(*flat: torch.Tensor):
            it = iter(flat)
            vals = []
            for name, v in zip(names, template):
                if isinstance(v, _Tensor) or (isinstance(v, (int, float, bool, complex)) and (
                        (use_twin and name in info.converted) or name in info.tensor_args)):
                    vals.append(next(it))
                elif isinstance(v, (list, tuple)) and any(isinstance(e, _Tensor) for e in v):
                    vals.append(type(v)(next(it) if isinstance(e, _Tensor) else e for e in v))
                else:
                    vals.append(v)
            pos = [v for n, v in zip(names, vals) if n not in kwarg_only]
            kw = {n: v for n, v in zip(names, vals) if n in kwarg_only}
            return target_op(*pos, **kw)

        try:
            tg = trace(call, tuple(examples))
        except LoweringError as e:
            raise Unsupported(info.name, UnsupportedKind.NOT_LOWERABLE, str(e)) from None
        except Exception as e:  # tracing itself failed (an op PyTorch cannot trace with fake tensors)
            raise Unsupported(info.name, UnsupportedKind.NOT_TRACEABLE,
                              f"cannot trace with fake tensors: {type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''}") from None
        self.stablehlo = tg.stablehlo
        self.mutated = tg.mutated_inputs
        self.layout = tg.out_layout
        self._compile()
        # The dtypes PyTorch gives each result; cast where the lowered program differs (0-d promotion, uint).
        expected = _expected_dtypes(info.op, values)
        out_node = next(n for n in reversed(tg.gm.graph.nodes) if n.op == "output")
        produced = [n.meta["val"].dtype for n in out_node.args[0]]
        n_user = len(produced) - len(self.mutated)
        self.casts: list[torch.dtype | None] = [None] * len(produced)
        user_slots = [s for s in self.layout.slots if isinstance(s, int)]
        for slot, want in zip(user_slots, expected):
            if want is not None and slot < n_user and produced[slot] != want:
                self.casts[slot] = want
        for j, idx in enumerate(self.mutated):
            src = values_tensor(dyn, idx)
            if src is not None and produced[n_user + j] != src.dtype:
                self.casts[n_user + j] = src.dtype
        self.n_user = n_user
        self.constants = tg.constants

    def _finish(self, info: OverloadFacts) -> None:
        self._scalars: dict[tuple, Any] = {}
        self._cast_slots = [(i, dt) for i, dt in enumerate(self.casts) if dt is not None]
        self._writes = any(info.write_returns)
        self._to_python = info.surrogate is not None
        spec = self.layout.spec
        if spec.is_leaf() and self.layout.slots == [0]:
            self._rebuild = _first
        elif (spec.type is tuple and all(c.is_leaf() for c in spec.children())
              and self.layout.slots == list(range(len(self.layout.slots)))):
            self._rebuild = tuple
        else:
            self._rebuild = self.layout.rebuild

    def _scalar_buffer(self, v: Any, dt: torch.dtype):
        k = (type(v), v, dt)
        b = self._scalars.get(k)
        if b is None:
            t = torch.tensor(v, dtype=dt)
            b = (self.exe.buffer(t), t)
            if len(self._scalars) < 256:
                self._scalars[k] = b
        return b[0]

    def __call__(self, info: OverloadFacts, values: list[Any], dyn: list[Any]) -> Any:
        device = _CPU
        for v in dyn:
            if isinstance(v, _Tensor) and not v.is_cpu:
                device = v.device
                break
        view, adopt = _device_fns(device)
        buffers = []
        exe = self.exe
        import_buffer, xla_device = exe._to_buffer, exe._device
        for (kind, dt), v in zip(self.kinds, dyn):
            if kind != "t":
                buffers.append(self._scalar_buffer(v, dt))
                continue
            if not v.is_cpu:  # a device tensor read as it is: its aliasing buffer is reusable
                buf = _cached_buffer(v)
                if buf is None:
                    h = view(v)
                    if h.is_contiguous():
                        buf = import_buffer(_C._to_dlpack_unshared(h), xla_device, None)  # the buffer keeps h alive
                        _remember_buffer(v, buf)
                    else:
                        buf = import_buffer(_C._to_dlpack_unshared(h.contiguous()), xla_device, None)
                buffers.append(buf)
                continue
            # CPU tensors (and CPU wrapped numbers riding along with device tensors)
            buffers.append(import_buffer(_C._to_dlpack_unshared(v.contiguous()), xla_device, None))
        for c in self.constants:
            buffers.append(import_buffer(_C._to_dlpack_unshared(c), xla_device, None))
        outs, arrays = exe.run_buffers_keep(buffers)
        for i, dt in self._cast_slots:
            outs[i] = outs[i].to(dt)
        if self._to_python:
            return outs[0].item()
        n_user = self.n_user
        for j, idx in enumerate(self.mutated):
            target = dyn[idx]
            (target if target.is_cpu else view(target)).copy_(outs[n_user + j])
        if adopt is not None:
            outs = [adopt(o) for o in outs[:n_user]]
            for i, o in enumerate(outs):
                if self.casts[i] is None:  # the adopted tensor owns this very buffer's memory
                    _attach_buffer(o, arrays[i])
        elif len(outs) != n_user:
            outs = outs[:n_user]
        return self._returned(info, values, self._rebuild(outs))

    def _returned(self, info: OverloadFacts, values: list[Any], result: Any) -> Any:
        """What the op returns: ``result``, with in-place / ``out=`` returns replaced by the caller's tensors."""
        if self._writes:
            named = dict(zip(info.arg_names, values))
            if len(info.write_returns) == 1:
                return named[info.write_returns[0]] if info.write_returns[0] else result
            return tuple(named[w] if w else r for w, r in zip(info.write_returns, result))
        return result


# An XLA buffer aliasing a device tensor's memory, kept on the tensor so the next program that reads it skips
# the DLPack import (~4 us of a ~30 us op). It stays valid while the tensor still has the same memory and
# geometry; in-place writes need no invalidation because the buffer aliases the very memory they change.
_BUF_ATTR = "_neuron_xla_buffer"


def _cached_buffer(t: torch.Tensor):
    entry = t.__dict__.get(_BUF_ATTR)
    if entry is not None and entry[1] == t.data_ptr() and entry[2] == t.shape and entry[3] == t.stride():
        return entry[0]
    return None


def _attach_buffer(t: torch.Tensor, buf) -> None:
    t.__dict__[_BUF_ATTR] = (buf, t.data_ptr(), t.shape, t.stride())


def _remember_buffer(t: torch.Tensor, buf) -> None:
    # only a true alias may be reused: XLA copies an input it cannot use in place (misaligned memory)
    if buf.unsafe_buffer_pointer() == t.data_ptr():
        _attach_buffer(t, buf)


def _first(outs: list) -> Any:
    return outs[0]


_DEVICE_FNS: dict[torch.device, tuple] = {}


def _device_fns(device: torch.device) -> tuple:
    """(host view, adopt-or-None) for a device, built once per device."""
    fns = _DEVICE_FNS.get(device)
    if fns is None:
        if device.type == "cpu":
            fns = (None, None)
        else:
            fns = (dev.host_views(device), dev.adopter(device))
        _DEVICE_FNS[device] = fns
    return fns


def values_tensor(dyn: list[Any], idx: int) -> torch.Tensor | None:
    v = dyn[idx] if idx < len(dyn) else None
    return v if isinstance(v, _Tensor) else None


def _expected_dtypes(op: torch._ops.OpOverload, values: list[Any]) -> list[torch.dtype | None]:
    """Result dtypes from PyTorch's meta/fake implementation of the original op (flat, in return order)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    info = overload_facts(op)
    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            def fake(v):
                if isinstance(v, _Tensor):
                    return mode.from_tensor(torch.empty(tuple(v.shape), dtype=v.dtype))
                if isinstance(v, (list, tuple)):
                    return type(v)(fake(e) for e in v)
                return v
            fv = [fake(v) for v in values]
            pos = [v for n, v in zip(info.arg_names, fv) if n not in info.kwarg_only]
            kw = {n: v for n, v in zip(info.arg_names, fv) if n in info.kwarg_only}
            out = op(*pos, **kw)
    except Exception:
        return []
    import torch.utils._pytree as pytree

    return [t.dtype if isinstance(t, _Tensor) else None for t in pytree.tree_leaves(out)]


# ------------------------------------------------------------------------------------------------ cache
class ProgramCache:
    """(op, signature) → OpProgram, or the reason the call cannot be lowered."""

    def __init__(self, max_entries: int = 8192, program_class: type[OpProgram] | None = None):
        self._programs: OrderedDict[tuple, OpProgram | Unsupported] = OrderedDict()
        self.program_class = program_class or OpProgram  # how a program is compiled and run (sim | nrt)
        self._lock = threading.Lock()
        self.max_entries = max_entries
        self.builds = 0

    def clear(self) -> None:
        with self._lock:
            self._programs.clear()

    def lookup(self, op: torch._ops.OpOverload, args: tuple, kwargs: dict):
        """(program or Unsupported, info, values, dyn)."""
        info = overload_facts(op)
        values = bind(info, args, kwargs)
        key, dyn = signature(info, values)
        prog = self._programs.get(key)
        if prog is None:
            prog = info.unsupported(values)
            if prog is None and not any(isinstance(v, _Tensor) for v in dyn):
                prog = Unsupported(info.name, UnsupportedKind.FACTORY,
                                   "no tensor inputs (a factory op; the runtime allocates)")
            elif prog is None:
                try:
                    prog = self.program_class(info, values, dyn, key)
                except Unsupported as e:
                    prog = e
                self.builds += 1
            with self._lock:
                self._programs[key] = prog
                if len(self._programs) > self.max_entries:
                    self._programs.popitem(last=False)
        return prog, info, values, dyn

    def run(self, op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
        """Run one ATen op through its program; raises ``Unsupported`` if it has no lowering."""
        prog, info, values, dyn = self.lookup(op, args, kwargs)
        if isinstance(prog, Unsupported):
            raise prog
        return prog(info, values, dyn)


_CACHE = ProgramCache()


def program_cache() -> ProgramCache:
    return _CACHE


def run_op(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    """Run one ATen op through lowering + XLA:CPU; raises ``Unsupported`` if it has no lowering."""
    return _CACHE.run(op, args, kwargs)
