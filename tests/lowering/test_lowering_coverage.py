"""Coverage: the generated table gives each op its status (what fallback_ops() and the op policy act on)
and is rendered into docs/op_coverage.md."""

import subprocess
import sys
from pathlib import Path

from torchneuron.lowering import coverage, op_table
from torchneuron.testing.coverage_doc import render_doc

ROOT = Path(__file__).resolve().parents[2]


def test_generated_table_is_well_formed():
    assert set(op_table.OVERLOADS.values()) <= {"lowered", "mismatch", "missing"}
    assert not set(op_table.OVERLOADS) & set(op_table.RUNTIME)
    for per_dtype in op_table.OPINFO.values():
        for status, cause in per_dtype.values():
            assert status in {"lowered", "mismatched", "missing", "random", "n/a"}
            assert status in ("lowered", "n/a") or cause


def test_doc_is_generated_from_the_table():
    assert (ROOT / "docs" / "op_coverage.md").read_text() == render_doc(op_table), \
        "docs/op_coverage.md is stale: run `python tools/gen_op_coverage.py --doc-only`"


def test_coverage_import_is_cheap():
    """torchneuron/__init__ installs the op policy, which asks this module, at import: no torch-mlir or jax
    may be imported for it."""
    code = ("import sys; import torchneuron.lowering.coverage as c; c.status('aten::sin.out'); "
            "bad = [m for m in ('torch_mlir', 'jax', 'jaxlib') if m in sys.modules]; print(bad); "
            "sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_overloads_the_sweep_did_not_run_inherit_the_program_they_run_as(monkeypatch):
    """gt.Scalar runs as gt.Tensor (scalar → tensor), add_/add.out as add.Tensor (functionalized)."""
    monkeypatch.setattr(op_table, "OVERLOADS", {"aten::gt.Tensor": "lowered", "aten::add.Tensor": "lowered",
                                                 "aten::nonzero": "missing"})
    coverage._derived_status.cache_clear()
    try:
        for op in ("aten::gt.Scalar", "aten::add_.Tensor", "aten::add.out", "aten::add_.Scalar"):
            assert coverage.status(op) == "lowered", op
        assert coverage.status("aten::nonzero.out") == "unknown"
        assert coverage.status("aten::not_an_op") == "unknown"
    finally:
        coverage._derived_status.cache_clear()
