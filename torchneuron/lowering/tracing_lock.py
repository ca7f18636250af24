"""torchneuron's FX traces outside a Dynamo compile behave, for other threads, as a Dynamo compile does.

While ``make_fx`` traces, FX's tracer replaces ``torch.nn.Module.__getattr__`` and ``__call__`` and sets its
"symbolic tracing" flag for the whole process, not per thread. torchneuron traces at call time, outside any
Dynamo compile: a dynamic-shape graph is specialised when a new shape arrives, an eager op may be lowered to a
single-op program. Meanwhile, in another thread,

- a Dynamo trace would inline the replaced functions and guard on their closures, and its guard building then
  fails once the trace ends (``InternalTorchDynamoError: 'NoneType' object is not subscriptable``);
- a call of an already compiled function would be refused ("Detected that you are using FX to symbolically
  trace a dynamo-optimized function").

Dynamo's own traces (AOTAutograd's ``make_fx``) avoid both by running under Dynamo's compile lock and with the
process-wide "compiling" flag set. ``fx_tracing`` does the same for torchneuron's traces. The lock is
re-entrant: traces inside a Dynamo compile (the backend lowering its pieces) already hold it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def fx_tracing() -> Iterator[None]:
    """Hold while running ``make_fx``. Without Dynamo loaded, no Dynamo trace can be running: no lock."""
    convert_frame = sys.modules.get("torch._dynamo.convert_frame")
    lock = getattr(convert_frame, "compile_lock", None)
    with lock if lock is not None else contextlib.nullcontext(), torch.compiler._compile_session_context():
        yield
