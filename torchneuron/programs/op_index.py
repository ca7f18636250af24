"""On-disk index of single-op programs: (op, signature) → the lowered StableHLO and how to call it.

With it, a new process in strict eager mode skips tracing and torch-mlir for every op signature an earlier
process has seen: the record gives the StableHLO text, whose executable the compile cache already holds.
Records live in the compile cache directory (same atomic writes, checksums and corrupt-entry handling) under
keys derived from the signature, the package versions and the settings that change the program.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from typing import Any

import torch
import torch.utils._pytree as pytree

_FORMAT = "op-index-2"  # 2: float64 no longer converted here (the device layer does)


def _dtype_name(dt: torch.dtype | None) -> str | None:
    return None if dt is None else str(dt).removeprefix("torch.")


def _dtype(name: str | None) -> torch.dtype | None:
    return None if name is None else getattr(torch, name)


# The code that writes a record: the front end (trace, passes, decompositions) and the program builders.
_FINGERPRINTED = ("lowering", "programs")


def _lowering_fingerprint() -> str:
    """A hash of the lowering code itself (``_FINGERPRINTED``), the decomposition packages too."""
    from ..compiler.keys import source_fingerprint

    return source_fingerprint(*_FINGERPRINTED)


def index_key(signature: tuple) -> str:
    from ..compiler.keys import package_versions

    h = hashlib.sha256()
    for part in (_FORMAT, package_versions(), _lowering_fingerprint(),
                 str(torch.get_default_dtype()), repr(signature)):
        h.update(part.encode())
        h.update(b"\x00")
    return "op" + h.hexdigest()[2:]


def encode_slots(slots: list) -> list | None:
    """Output slots (an int: a result index; ("const", v): a value kept out of the program) as JSON, or None
    when a constant is not something JSON carries faithfully."""
    out: list = []
    for s in slots:
        if isinstance(s, int):
            out.append(s)
        elif s[1] is None or isinstance(s[1], (bool, int, float, str)):
            out.append({"const": s[1]})
        else:
            return None
    return out


def decode_slots(slots: list) -> list:
    return [s if isinstance(s, int) else ("const", s["const"]) for s in slots]


def encode(stablehlo: str, kinds: list, mutated: list[int], spec: pytree.TreeSpec, slots: list, casts: list,
           n_user: int) -> bytes | None:
    """The record as JSON bytes, or None when it holds something JSON cannot carry faithfully."""
    enc_slots = encode_slots(slots)
    if enc_slots is None:
        return None
    try:
        spec_text = pytree.treespec_dumps(spec)
    except Exception:  # noqa: BLE001 - an exotic output container: just not persisted
        return None
    record = {"format": _FORMAT, "stablehlo": stablehlo, "kinds": [[k, _dtype_name(d)] for k, d in kinds],
              "mutated": mutated, "spec": spec_text, "slots": enc_slots,
              "casts": [_dtype_name(c) for c in casts], "n_user": n_user}
    return json.dumps(record).encode()


def decode(blob: bytes) -> dict | None:
    try:
        r = json.loads(blob)
        if r.get("format") != _FORMAT:
            return None
        return {
            "stablehlo": r["stablehlo"], "kinds": [(k, _dtype(d)) for k, d in r["kinds"]], "mutated": r["mutated"],
            "spec": pytree.treespec_loads(r["spec"]),
            "slots": decode_slots(r["slots"]),
            "casts": [_dtype(c) for c in r["casts"]], "n_user": r["n_user"],
        }
    except Exception as e:  # noqa: BLE001 - a stale or foreign record is rebuilt, never fatal
        warnings.warn(f"torchneuron op index: unreadable record ({type(e).__name__}: {e}); relowering", stacklevel=2)
        return None


def load(key: str) -> dict | None:
    from ..compiler import driver

    blob = driver.default_cache().disk.get(key)
    return decode(blob) if blob is not None else None


def store(key: str, blob: Any) -> None:
    from ..compiler import driver

    driver.default_cache().disk.put(key, blob)  # an unwritable directory is reported once, by the cache
