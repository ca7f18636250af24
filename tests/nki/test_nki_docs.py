"""The examples in docs/nki.md run, in order, in one namespace (docs show code that CI runs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchneuron import nki

DOC = Path(__file__).resolve().parents[2] / "docs" / "nki.md"


def test_doc_examples_run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 3
    namespace: dict[str, object] = {"__name__": "nki_docs"}
    try:
        for block in blocks:
            exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102 - the documentation's own code
    finally:
        nki.uninstall_import_aliases()
    out = capsys.readouterr().out
    assert "estimated 269.81 us on trn2 (compute-bound on tensor" in out  # the number the docs quote
