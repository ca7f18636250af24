"""The README and docs/ stay readable: the README fits on a few screens and no hand-written line runs past
300 characters (a long table cell belongs in prose or in a list). Generated text is exempt: the op, module and
nki_ops coverage pages are written by tools/gen_*.py, and the README's env-var table by torchneuron/_env.py."""

from tests.helpers import ROOT
from torchneuron import _env

README_MAX_LINES = 150
LINE_MAX_CHARS = 300
GENERATED_DOCS = {"op_coverage.md", "module_coverage.md", "nki_ops.md"}


def _hand_written_pages():
    yield ROOT / "README.md"
    yield from sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in GENERATED_DOCS)


def test_readme_fits_in_150_lines():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"


def test_no_hand_written_line_over_300_characters():
    generated = set(_env.markdown_table().splitlines())
    long = [f"{page.relative_to(ROOT)}:{n}: {len(line)} characters"
            for page in _hand_written_pages()
            for n, line in enumerate(page.read_text().splitlines(), 1)
            if len(line) > LINE_MAX_CHARS and line not in generated]
    assert not long, "split these lines (or move the detail into prose):\n" + "\n".join(long)


def test_the_exempt_pages_exist():
    # the exemption names real pages: when a generator renames its page, this list follows it
    assert {p.name for p in (ROOT / "docs").glob("*.md")} >= GENERATED_DOCS
