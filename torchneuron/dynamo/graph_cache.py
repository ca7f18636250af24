"""On-disk cache of lowered pieces, keyed on the FX graph: a process that has seen the piece before skips
tracing and torch-mlir (not even imported) and goes straight to the executable cache.

Records live in the compile cache directory (same atomic writes, checksums and locking as executables) under
keys derived from the piece's code, its input shapes and dtypes, the values of its tensor constants, the
settings that change the program and the versions of everything that lowers it.
"""

from __future__ import annotations

import hashlib
import io
import json
import operator
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx
import torch.utils._pytree as pytree

_FORMAT = "graph-piece-1"


@dataclass
class Record:
    stablehlo: str
    mutated: list[int]            # piece input index each trailing mutation result is written back to
    out_spec: pytree.TreeSpec     # the piece's output structure
    out_slots: list[Any]          # per output leaf: index into results, or ("const", value)
    constants: list[torch.Tensor]  # lifted constants, trailing program arguments (CPU)


def key(gm: fx.GraphModule, examples: list[torch.Tensor], settings: str) -> str:
    from ..compiler.keys import package_versions
    from ..programs.op_index import _lowering_fingerprint

    h = hashlib.sha256()
    for part in (_FORMAT, package_versions(), _lowering_fingerprint(), settings, str(torch.get_default_dtype()),
                 gm.code, repr([(tuple(e.shape), str(e.dtype)) for e in examples])):
        h.update(part.encode())
        h.update(b"\x00")
    hash_constants(h, gm)
    return "fx" + h.hexdigest()[2:]


def hash_constants(h: Any, gm: fx.GraphModule) -> None:
    """Feed the names and values of the tensors ``gm`` holds (buffers, ``get_attr`` constants) to ``h``."""
    for name, buf in sorted(gm.named_buffers()) + sorted(_tensor_attributes(gm)):
        h.update(name.encode())
        flat = buf.detach().cpu().contiguous().reshape(-1)
        h.update(flat.view(torch.uint8).numpy().tobytes() if buf.numel() else b"")


def _tensor_attributes(gm: fx.GraphModule) -> list[tuple[str, torch.Tensor]]:
    values = [(str(n.target), operator.attrgetter(str(n.target))(gm)) for n in gm.graph.nodes if n.op == "get_attr"]
    return [(name, v) for name, v in values if isinstance(v, torch.Tensor)]


def encode(rec: Record) -> bytes | None:
    from ..programs.op_index import encode_slots

    slots = encode_slots(rec.out_slots)
    if slots is None:
        return None
    buf = io.BytesIO()
    torch.save([c.cpu() for c in rec.constants], buf)
    meta = {"format": _FORMAT, "stablehlo": rec.stablehlo, "mutated": rec.mutated,
            "spec": pytree.treespec_dumps(rec.out_spec), "slots": slots}
    head = json.dumps(meta).encode()
    return len(head).to_bytes(8, "little") + head + buf.getvalue()


def decode(blob: bytes) -> Record | None:
    from ..programs.op_index import decode_slots

    try:
        n = int.from_bytes(blob[:8], "little")
        meta = json.loads(blob[8:8 + n])
        if meta.get("format") != _FORMAT:
            return None
        constants = torch.load(io.BytesIO(blob[8 + n:]), weights_only=True)
        return Record(meta["stablehlo"], meta["mutated"], pytree.treespec_loads(meta["spec"]),
                      decode_slots(meta["slots"]), constants)
    except Exception:  # noqa: BLE001 - a stale or foreign record is rebuilt, never fatal
        return None


def load(k: str) -> Record | None:
    from ..compiler import driver

    blob = driver.default_cache().disk.get(k)
    return decode(blob) if blob is not None else None


def store(k: str, rec: Record) -> None:
    from ..compiler import driver

    blob = encode(rec)
    if blob is None:
        return
    driver.default_cache().disk.put(k, blob)  # an unwritable directory is reported once, by the cache


def has_marker(k: str) -> bool:
    """Whether ``put_marker(k)`` ran in this or an earlier process sharing the cache directory."""
    from ..compiler import driver

    return driver.default_cache().disk.get(k) is not None


def put_marker(k: str) -> None:
    from ..compiler import driver

    driver.default_cache().disk.put(k, b"1")
