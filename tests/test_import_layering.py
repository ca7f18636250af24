"""The package's modules form layers: no import cycles (lazy imports inside functions count too, since a
cycle is a layering mistake whether or not it bites at import time), and tools, benchmarks and tests do not
reach into one another (shared code lives in the package, shared test code in tests/helpers.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.helpers import ROOT

PACKAGE = "torchneuron"
KNOWN_CYCLES: tuple[set[str], ...] = ()


def _modules() -> dict[str, tuple[Path | None, bool]]:
    mods: dict[str, tuple[Path | None, bool]] = {f"{PACKAGE}._C": (None, False)}  # the extension module
    for path in (ROOT / PACKAGE).rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return mods


def _resolve(module: str, is_pkg: bool, level: int, name: str) -> str:
    if level == 0:
        return name
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (``from pkg import sub`` imports ``pkg.sub``)."""
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, (path, is_pkg) in mods.items():
        if path is None:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges[mod] |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(mod, is_pkg, node.level, node.module or "")
                if not target.startswith(PACKAGE):
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in mods:
                        edges[mod].add(sub)
                    elif target in mods:
                        edges[mod].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def _known(cycle: list[str]) -> bool:
    return any(all(m.startswith(tuple(prefixes)) for m in cycle) for prefixes in KNOWN_CYCLES)


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_package_has_no_import_cycles():
    graph = import_graph()
    assert len(graph) > 100 and graph["torchneuron.lowering.trace"]  # the scan sees the package
    assert [c for c in cycles(graph) if not _known(c)] == []


# The front end turns a function or FX graph into StableHLO text; running it (the device, a compiler, the
# profiler, the estimator) is torchneuron.programs' job, which sits above it.
_ABOVE_THE_FRONT_END = ("torchneuron._C", "torchneuron.compiler", "torchneuron.profiler", "torchneuron.estimator",
                        "torchneuron.programs")


def test_lowering_imports_nothing_that_runs_programs():
    graph = import_graph()
    front_end = [m for m in graph if m == "torchneuron.lowering" or m.startswith("torchneuron.lowering.")]
    assert "torchneuron.lowering.coverage" in front_end
    bad = {m: sorted(t for t in graph[m] if t in _ABOVE_THE_FRONT_END or t.startswith(
        tuple(f"{a}." for a in _ABOVE_THE_FRONT_END))) for m in front_end}
    assert {m: t for m, t in bad.items() if t} == {}


def test_lowering_decompositions_only_assembles_the_table():
    graph = import_graph()
    families = [m for m in graph
                if m.startswith("torchneuron.lowering.decomp_") and m != "torchneuron.lowering.decomp_common"]
    assert families and all("torchneuron.lowering.decompositions" not in graph[m] for m in families)
    tree = ast.parse((ROOT / PACKAGE / "lowering" / "decompositions.py").read_text())
    functions = sorted(n.name for n in tree.body if isinstance(n, ast.FunctionDef))
    assert functions == ["_added", "_lowered_natively", "neuron_decompositions", "on_demand"]


_TOOLS_PATH = re.compile(r"""/\s*["']tools["']|["']tools/""")  # ROOT / "tools" / ..., "tools/gen_op_coverage.py"


def _python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_tools_and_benchmarks_do_not_import_tests():
    bad = [str(p.relative_to(ROOT)) for folder in ("tools", "benchmarks") for p in _python_files(folder)
           if "tests" in _imported_roots(p)]
    assert not bad, "move what they share into the package (e.g. torchneuron.testing)"


def test_tests_do_not_load_tools():
    bad = [str(p.relative_to(ROOT)) for p in _python_files("tests")
           if p.name != Path(__file__).name and (_TOOLS_PATH.search(p.read_text()) or "tools" in _imported_roots(p))]
    assert not bad, "tests import the package, never a tool script"
