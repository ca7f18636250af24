"""The examples in docs/compile.md run, in order, in one namespace (docs show code that CI runs)."""

import pathlib
import re

DOC = (pathlib.Path(__file__).parent.parent.parent / "docs" / "compile.md").read_text()


def test_compile_doc_examples_run():
    namespace: dict = {}
    blocks = re.findall(r"```python\n(.*?)```", DOC, re.S)
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, "docs/compile.md", "exec"), namespace)
