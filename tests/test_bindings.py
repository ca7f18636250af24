"""torchneuron._C: its typed stub, the built module and what the Python code calls agree.

Python never probes for a binding (``getattr(_C, "x", None)`` switched features off silently when a binding
was renamed): every ``_C.<name>`` the sources use must exist, and the stub must list exactly what exists.
"""

import ast
from pathlib import Path

import torchneuron
from tests.helpers import ROOT
from torchneuron import _C

STUB = ROOT / "torchneuron" / "_C.pyi"
SOURCES = ("torchneuron", "tests", "benchmarks", "tools", "nki_ops")
# Bindings another change adds (the lead removes an entry when that change lands).
PENDING = {"_execute_neff": "issue 13: NEFF execution on the nrt runtime (compiler/neuronx_cc.py)"}


def _stub_names() -> set[str]:
    tree = ast.parse(STUB.read_text())
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def _bound() -> set[str]:
    return {n for n in dir(_C) if n.startswith("_") and not n.startswith("__")}


def _imports_our_C(tree: ast.Module, path: Path) -> bool:
    in_package = ROOT / "torchneuron" in path.parents
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "_C" for a in node.names):
            if node.module == "torchneuron" or (node.level > 0 and in_package and not node.module):
                return True
    return False


def _uses(path: Path) -> dict[str, list[str]]:
    """Binding name -> places, for `_C.name`, `torchneuron._C.name` and `getattr/hasattr(_C, "name")`."""
    tree = ast.parse(path.read_text())
    ours = _imports_our_C(tree, path)
    found: dict[str, list[str]] = {}

    def add(name: str, node: ast.AST) -> None:
        found.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "_C" and ours:
            add(node.attr, node)
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "_C"
              and isinstance(node.value.value, ast.Name) and node.value.value.id == "torchneuron"):
            add(node.attr, node)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
              and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "_C" and ours
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)):
            add(str(node.args[1].value), node)
    return found


def test_stub_lists_exactly_the_bindings():
    stub, bound = _stub_names(), _bound()
    assert stub - bound == set(), "in _C.pyi but not bound"
    assert bound - stub == set(), "bound but missing from _C.pyi"


def test_every_binding_python_calls_exists():
    uses: dict[str, list[str]] = {}
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for name, places in _uses(path).items():
                uses.setdefault(name, []).extend(places)
    assert len(uses) > 20  # the scan sees the real call sites
    missing = {n: p for n, p in uses.items() if not hasattr(_C, n) and n not in PENDING}
    assert not missing, f"called but not bound: {missing}"


def test_no_binding_is_probed_for():
    probes = []
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue
            text = path.read_text()
            for n, line in enumerate(text.splitlines(), 1):
                if ("getattr(_C," in line or "hasattr(_C," in line) and not any(p in line for p in PENDING):
                    probes.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not probes, "call the binding directly (a missing one must fail loudly):\n" + "\n".join(probes)


def test_package_exports_resolve():
    for name in torchneuron.__all__:
        assert getattr(torchneuron, name) is not None
