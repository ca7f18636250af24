"""csrc/'s folders form layers, as OpenReg's do: a folder includes headers of its own folder and of folders
below it, never of one above it, so there is no folder-level include loop.

A folder is the first directory under csrc/: runtime/nrt/ belongs to runtime/ (libnrt's NrtRuntime is one
implementation of the Runtime seam, and runtime selection includes it), aten/native/ belongs to aten/."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import ROOT

CSRC = ROOT / "csrc"
# Lowest first. The allocator sits on the runtime alone (the current device and stream it allocates on live
# in runtime/CurrentDevice.h); the profiler hears about allocations through a hook the allocator exposes.
LAYERS = ("runtime", "allocator", "device", "profiler", "aten", "amp", "distributed", "python")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def includes(root: Path = CSRC) -> list[tuple[Path, Path]]:
    """(including file, included file) for every ``#include "..."`` of a file under ``root`` that names a file
    there (resolved against the including file's folder first, then ``root``, as the compiler does)."""
    root, found = root.resolve(), []
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".cpp", ".h")):
        for name in _INCLUDE.findall(path.read_text()):
            for candidate in (path.parent / name, root / name):
                if candidate.is_file():
                    found.append((path, candidate.resolve()))
                    break
    return found


def folder_graph(pairs: list[tuple[Path, Path]], root: Path = CSRC) -> dict[tuple[str, str], list[str]]:
    """(folder, included folder) -> the include lines that make the edge, for edges between two folders."""
    root, edges = root.resolve(), {}
    for src, dst in pairs:
        a, b = src.relative_to(root).parts[0], dst.relative_to(root).parts[0]
        if a != b:
            edges.setdefault((a, b), []).append(f"csrc/{src.relative_to(root)} includes {dst.relative_to(root)}")
    return edges


def folder_cycles(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """The sets of folders that reach one another (strongly connected, more than one folder), sorted."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
        succ.setdefault(b, set())

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in succ[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reachable = {f: reach(f) for f in succ}
    groups = {frozenset(g for g in reachable[f] if f in reachable[g]) | {f} for f in succ}
    return sorted(sorted(g) for g in groups if len(g) > 1)


def _describe(cycle: list[str], edges: dict[tuple[str, str], list[str]]) -> str:
    lines = [f"include loop between {', '.join(cycle)}:"]
    for (a, b), why in sorted(edges.items()):
        if a in cycle and b in cycle:
            lines += [f"  {a} -> {b}: {w}" for w in why]
    return "\n".join(lines)


def test_the_include_graph_is_read():
    # Guards the two tests below against passing on a parser that finds nothing.
    edges = folder_graph(includes())
    assert ("aten", "runtime") in edges and ("python", "aten") in edges


def test_no_folder_level_include_loop():
    edges = folder_graph(includes())
    loops = [_describe(c, edges) for c in folder_cycles(edges)]
    assert not loops, "\n".join(loops)


def test_every_folder_has_a_layer():
    folders = {p.name for p in CSRC.iterdir() if p.is_dir()}
    assert folders <= set(LAYERS), f"add {sorted(folders - set(LAYERS))} to LAYERS, at the level it sits"


def test_includes_go_down_the_layers():
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = [
        f"{a} (layer {rank[a]}) -> {b} (layer {rank[b]}): {w}"
        for (a, b), why in sorted(folder_graph(includes()).items())
        if a in rank and b in rank and rank[b] > rank[a]
        for w in why
    ]
    assert not upward, "a folder includes one above it (LAYERS, lowest first):\n" + "\n".join(upward)
