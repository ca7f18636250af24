"""Every skip, expected failure and tolerance change of the OpInfo conformance suite, with its reason.

The one table both the pytest suite and report.py read. Keys are (op, kind, dtype): op is op_db's
name[.variant], kind one of harness.KINDS or "*", dtype a torch.dtype or None for every dtype.
An XFAIL entry whose samples all pass makes the pytest suite fail ("stale entry"), so the table cannot rot.
"""

from __future__ import annotations

import torch

ANY = None

# (op, kind, dtype) -> reason. Skipped outright (not run).
SKIP: dict[tuple[str, str, torch.dtype | None], str] = {}

# (op, kind, dtype) -> reason. Run and counted; failing samples are expected.
XFAIL: dict[tuple[str, str, torch.dtype | None], str] = {}

# (op, dtype) -> (rtol, atol, reason): where neuron legitimately computes differently from the CPU.
TOLERANCE: dict[tuple[str, torch.dtype | None], tuple[float, float, str]] = {}


def _lookup(table: dict, op: str, kind: str, dtype: torch.dtype):
    for key in ((op, kind, dtype), (op, kind, ANY), (op, "*", dtype), (op, "*", ANY)):
        if key in table:
            return table[key]
    return None


def skip_reason(op: str, kind: str, dtype: torch.dtype) -> str | None:
    return _lookup(SKIP, op, kind, dtype)


def xfail_reason(op: str, kind: str, dtype: torch.dtype) -> str | None:
    return _lookup(XFAIL, op, kind, dtype)


def tolerance(op: str, dtype: torch.dtype) -> tuple[float, float] | None:
    entry = TOLERANCE.get((op, dtype)) or TOLERANCE.get((op, ANY))
    return None if entry is None else entry[:2]
