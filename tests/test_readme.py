"""The README stays true: its env-var table is the registry's, and its Python examples run."""

import pathlib
import re

from torchneuron import _env

README = (pathlib.Path(__file__).parent.parent / "README.md").read_text()


def test_first_two_commands_are_the_setup():
    block = re.search(r"```\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert [line.split("#")[0].strip() for line in block] == ["make demo", "make test"]


def test_env_table_matches_registry():
    assert _env.markdown_table() in README


def test_python_examples_run():
    for block in re.findall(r"```python\n(.*?)```", README, re.S):
        exec(compile(block, "README.md", "exec"), {})
