"""Every environment variable is read in one place, torchneuron/_env.py; the C++ layer gets values passed in
(torchneuron/_registration.py, at import) and never reads the environment itself."""

import ast
import re

from tests.helpers import ROOT
from torchneuron import _env

_CPP_ENV_READ = re.compile(r"\b(getenv|secure_getenv|getenv_s|environ|get_env)\b")
_OUR_PREFIXES = ("TORCHNEURON_", "NEURON_")
_OUR_NAME = re.compile(r"[\"']((?:TORCHNEURON|NEURON)_[A-Z0-9_]+)[\"']")


def _sources(folder: str, *suffixes: str):
    return sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in suffixes)


def test_cpp_reads_no_environment_variable():
    found = []
    for path in _sources("csrc", ".cpp", ".h"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//")[0]
            if _CPP_ENV_READ.search(code):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "read it in torchneuron/_env.py and pass the value in:\n" + "\n".join(found)


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"  # os.environ, _os.environ, ...


def _keys_read(tree: ast.AST):
    """(line, key expression) of every read of the process environment: ``environ[k]``, ``environ.get(k)``
    (and ``pop``, ``setdefault``), ``k in environ``, ``getenv(k)``. Writes (``environ[k] = v``) are not reads."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            yield node.lineno, node.slice
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "setdefault") \
                    and _is_environ(func.value):
                yield node.lineno, node.args[0]
            elif (isinstance(func, ast.Attribute) and func.attr == "getenv") or (
                    isinstance(func, ast.Name) and func.id == "getenv"):
                yield node.lineno, node.args[0]
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators) and any(
                isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            yield node.lineno, node.left


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "string"`` constants, the way a variable name hides behind a constant."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value.value
    return out


def _our_reads(source: str) -> list[str]:
    """The reads in ``source`` of a variable that belongs to torchneuron: one named by a string (or a module
    constant holding it) with our prefix, or one named through ``_env`` (which must then read it itself)."""
    tree = ast.parse(source)
    strings = _module_strings(tree)
    found = []
    for line, key in sorted(_keys_read(tree), key=lambda read: read[0]):
        if isinstance(key, ast.Attribute) and isinstance(key.value, ast.Name) and key.value.id == "_env":
            found.append(f"{line}: {getattr(_env, key.attr, key.attr)}")  # declared, so _env.get reads it
            continue
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            name = key.value
        elif isinstance(key, ast.Name) and key.id in strings:
            name = strings[key.id]
        else:
            continue
        if name.startswith(_OUR_PREFIXES):
            found.append(f"{line}: {name}")
    return found


def test_the_read_check_sees_through_constants_and_aliases():
    source = '''
import os, os as _os
from os import getenv
from torchneuron import _env
ENV_VAR = "TORCHNEURON_TARGET"
a = os.environ.get(ENV_VAR) or "trn2"
b = _os.environ["TORCHNEURON_EAGER"]
c = "NEURON_CC_FLAGS" in os.environ
d = getenv(_env.FP64)
os.environ[_env.ROOT_COMM_ID] = "host:1"   # a write: libnrt reads it
e = os.environ.get("XDG_CACHE_HOME")       # not ours
'''
    assert _our_reads(source) == ["6: TORCHNEURON_TARGET", "7: TORCHNEURON_EAGER", "8: NEURON_CC_FLAGS",
                                  "9: TORCHNEURON_FP64"]


def test_python_reads_our_variables_through_env_only():
    found, undeclared = [], set()
    for path in _sources("torchneuron", ".py"):
        if path.name == "_env.py":
            continue
        text = path.read_text()
        found += [f"{path.relative_to(ROOT)}:{read}" for read in _our_reads(text)]
        undeclared |= {name for name in _OUR_NAME.findall(text) if name not in _env.VARS}
    assert not found, "use torchneuron._env.get(...):\n" + "\n".join(found)
    assert not undeclared, f"declare these in torchneuron/_env.py: {sorted(undeclared)}"
