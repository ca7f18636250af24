"""The examples in docs/profiler.md run, in order, in one namespace (docs show code that CI runs)."""

import pathlib
import re

DOC = (pathlib.Path(__file__).parent.parent.parent / "docs" / "profiler.md").read_text()


def test_profiler_doc_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOC, re.DOTALL)
    assert len(blocks) == 3
    namespace: dict = {}
    for block in blocks:
        exec(compile(block.replace("/tmp/neuron-trace.json", str(tmp_path / "trace.json")), "docs/profiler.md",
                     "exec"), namespace)
    assert (tmp_path / "trace.json").exists()
