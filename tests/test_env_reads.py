"""Every environment variable is read in one place, torchneuron/_env.py; the C++ layer gets values passed in
(torchneuron/_registration.py, at import) and never reads the environment itself."""

import re

from tests.helpers import ROOT
from torchneuron import _env

_CPP_ENV_READ = re.compile(r"\b(getenv|secure_getenv|getenv_s|environ|get_env)\b")
_PY_ENV_READ = re.compile(r"os\.(environ|getenv)\b[^\n]*[\"']((?:TORCHNEURON|NEURON)_[A-Z0-9_]+)")
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


def test_python_reads_our_variables_through_env_only():
    found, undeclared = [], set()
    for path in _sources("torchneuron", ".py"):
        if path.name == "_env.py":
            continue
        text = path.read_text()
        found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in _PY_ENV_READ.finditer(text)]
        undeclared |= {name for name in _OUR_NAME.findall(text) if name not in _env.VARS}
    assert not found, "use torchneuron._env.get(...):\n" + "\n".join(found)
    assert not undeclared, f"declare these in torchneuron/_env.py: {sorted(undeclared)}"
