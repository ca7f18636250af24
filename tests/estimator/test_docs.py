"""docs/estimate.md: its examples run, in order, in one namespace, and its calibration table's BERT rows are
what the estimator says today (the NKI rows are the slow test's)."""

import pathlib
import re

import pytest

from torchneuron.estimator import calibration

DOC = (pathlib.Path(__file__).parent.parent.parent / "docs" / "estimate.md").read_text()


def test_estimate_doc_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", DOC, re.DOTALL)
    assert len(blocks) == 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/estimate.md", "exec"), namespace)
    assert namespace["est"].auto_cast == "matmult-bf16"


def test_the_calibration_table_is_current():
    rows = re.findall(r"\| bert-base-uncased, seq 128, batch (\d+), FP32 \+ matmult-bf16 \| ([\d.]+) \| ([\d.]+) \|",
                      DOC)
    assert len(rows) == 2
    estimated = {p.name.split("batch ")[1].split(" ")[0]: p for p in calibration.bert_points()}
    for batch, published, estimate_ms in rows:
        point = estimated[batch]
        assert float(published) == point.published_ms
        assert float(estimate_ms) == pytest.approx(point.estimated_ms, abs=0.01)
