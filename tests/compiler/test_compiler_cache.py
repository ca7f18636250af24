"""The compile cache: keys, memory + disk levels, corrupt entries, atomic writes, several processes."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from torchneuron.compiler import driver, keys
from torchneuron.compiler.cache import CompileCache, DiskCache

ROOT = Path(__file__).resolve().parents[2]

ADD = """module {
  func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


def test_key_covers_everything_that_changes_the_artifact():
    base = dict(backend="xla-cpu", target="trn2", lnc=2, opt_level=1, compiler_version="c1")
    k = keys.cache_key(ADD, **base)
    assert k == keys.cache_key(ADD, **base)
    for change in ({"target": "trn3"}, {"lnc": 1}, {"opt_level": 2}, {"compiler_version": "c2"},
                   {"backend": "neuronx-cc"}, {"extra_flags": ("--verbose",)}):
        assert keys.cache_key(ADD, **{**base, **change}) != k, change
    assert keys.cache_key(ADD.replace("add", "subtract"), **base) != k
    assert "torch=" in keys.package_versions() and "torch-mlir=" in keys.package_versions()


def test_memory_then_disk_then_compile(tmp_path):
    calls = []
    cache = CompileCache(tmp_path)

    def build():
        calls.append(1)
        return b"artifact"

    assert cache.get_or_compile("k" * 64, build, lambda b: b.decode()) == "artifact"
    assert cache.get_or_compile("k" * 64, build, lambda b: b.decode()) == "artifact"
    assert cache.stats == {"hits_memory": 1, "hits_disk": 0, "compiles": 1}
    fresh = CompileCache(tmp_path)          # a new process: memory empty, disk warm
    assert fresh.get_or_compile("k" * 64, build, lambda b: b.decode()) == "artifact"
    assert fresh.stats["hits_disk"] == 1 and len(calls) == 1


def test_writes_are_atomic_and_leave_no_temporaries(tmp_path):
    disk = DiskCache(tmp_path)
    disk.put("ab" + "0" * 62, b"x" * 1000)
    files = [p.name for p in (tmp_path / "ab").iterdir()]
    assert files == ["ab" + "0" * 62 + ".bin"]


def test_corrupt_entry_is_recompiled_not_fatal(tmp_path):
    key = "cd" + "1" * 62
    cache = CompileCache(tmp_path)
    cache.get_or_compile(key, lambda: b"good artifact", bytes)
    entry = tmp_path / "cd" / f"{key}.bin"
    blob = bytearray(entry.read_bytes())
    blob[-3] ^= 0xFF                           # flip bits in the payload
    entry.write_bytes(bytes(blob))
    fresh = CompileCache(tmp_path)
    with pytest.warns(UserWarning, match="corrupt entry"):
        assert fresh.get_or_compile(key, lambda: b"good artifact", bytes) == b"good artifact"
    assert fresh.stats["compiles"] == 1
    assert CompileCache(tmp_path).get_or_compile(key, lambda: b"unused", bytes) == b"good artifact"


def test_entry_the_loader_rejects_is_recompiled(tmp_path):
    key = "ef" + "2" * 62
    CompileCache(tmp_path).get_or_compile(key, lambda: b"v1", bytes)

    def load(b):
        if b == b"v1":
            raise ValueError("incompatible executable")
        return b

    with pytest.warns(UserWarning, match="cannot be loaded"):
        assert CompileCache(tmp_path).get_or_compile(key, lambda: b"v2", load) == b"v2"


def test_truncated_xla_executable_is_recompiled(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path))
    driver.compile(ADD, cache=CompileCache())
    (entry,) = tmp_path.glob("*/*.bin")
    entry.write_bytes(entry.read_bytes()[:100])  # truncated: header intact, payload short
    cache = CompileCache()
    with pytest.warns(UserWarning, match="corrupt"):
        exe = driver.compile(ADD, cache=cache)
    assert cache.stats["compiles"] == 1
    x = torch.arange(4.0)
    torch.testing.assert_close(exe.run([x, x])[0], x + x)


_CHILD = textwrap.dedent("""
    import json, sys, torch
    from torchneuron.compiler import driver
    from torchneuron.compiler.cache import CompileCache
    cache = CompileCache()
    exe = driver.compile(sys.argv[1], cache=cache)
    x = torch.arange(4.0)
    out = exe.run([x, x])[0]
    print(json.dumps({"stats": cache.stats, "out": out.tolist()}))
""")


def _child(tmp_path, text):
    env = {"TORCHNEURON_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.Popen([sys.executable, "-c", _CHILD, text], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_second_process_hits_the_disk_cache(tmp_path):
    first = _child(tmp_path, ADD)
    a = json.loads(first.communicate()[0])
    second = _child(tmp_path, ADD)
    b = json.loads(second.communicate()[0])
    assert a["stats"]["compiles"] == 1
    assert b["stats"] == {"hits_memory": 0, "hits_disk": 1, "compiles": 0}
    assert a["out"] == b["out"] == [0.0, 2.0, 4.0, 6.0]


def test_concurrent_processes_compile_once(tmp_path):
    text = ADD.replace("tensor<4xf32>", "tensor<4xf32> ")  # a key no other test uses
    procs = [_child(tmp_path, text) for _ in range(3)]
    results = [json.loads(p.communicate()[0]) for p in procs]
    assert sum(r["stats"]["compiles"] for r in results) == 1
    assert sum(r["stats"]["hits_disk"] for r in results) == 2


_READ_ONLY_CHILD = textwrap.dedent("""
    import json, sys, warnings
    from torchneuron.compiler.cache import CompileCache
    warnings.simplefilter("always")
    cache = CompileCache(sys.argv[1])
    with warnings.catch_warnings(record=True) as caught:
        got = [cache.get_or_compile(k, lambda k=k: f"new {k[:2]}".encode(), bytes).decode() for k in sys.argv[2:]]
        got += [cache.get_or_compile(k, lambda: b"again", bytes).decode() for k in sys.argv[2:]]
    print(json.dumps({"got": got, "stats": cache.stats, "warnings": [str(w.message) for w in caught]}))
""")


def _in_read_only(root, *keys):
    from tests.helpers import python_env
    from tests.read_only import read_only_command

    argv = read_only_command(str(root), [sys.executable, "-c", _READ_ONLY_CHILD, str(root), *keys])
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=python_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_read_only_directory_serves_hits_and_compiles_misses_with_one_warning(tmp_path):
    hit, miss1, miss2 = "a1" + "0" * 62, "b2" + "0" * 62, "c3" + "0" * 62
    CompileCache(tmp_path).get_or_compile(hit, lambda: b"warm", bytes)
    out = _in_read_only(tmp_path, hit, miss1, miss2)
    assert out["got"] == ["warm", "new b2", "new c3", "warm", "new b2", "new c3"]
    assert out["stats"] == {"hits_memory": 3, "hits_disk": 1, "compiles": 2}
    (warning,) = out["warnings"]
    assert str(tmp_path) in warning and "TORCHNEURON_CACHE_DIR" in warning


def test_unwritable_directory_is_reported_once_and_never_raises(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = CompileCache(blocker / "cache")              # cannot be created, even by root
    with pytest.warns(UserWarning, match="not writable") as caught:
        for k in ("d4" + "0" * 62, "e5" + "0" * 62):
            assert cache.get_or_compile(k, lambda: b"x", bytes) == b"x"
    assert len([w for w in caught if "compile cache" in str(w.message)]) == 1
    assert cache.stats["compiles"] == 2


def test_entry_that_became_a_directory_is_rewritten(tmp_path):
    key = "f6" + "0" * 62
    (tmp_path / "f6" / f"{key}.bin" / "junk").mkdir(parents=True)
    with pytest.warns(UserWarning, match="cannot read entry"):
        assert CompileCache(tmp_path).get_or_compile(key, lambda: b"fresh", bytes) == b"fresh"
    fresh = CompileCache(tmp_path)                       # the next process reads it instead of recompiling
    assert fresh.get_or_compile(key, lambda: b"unused", bytes) == b"fresh"
    assert fresh.stats == {"hits_memory": 0, "hits_disk": 1, "compiles": 0}


def test_entry_that_became_a_directory_in_a_read_only_cache_is_bypassed(tmp_path):
    key = "a7" + "0" * 62
    (tmp_path / "a7" / f"{key}.bin").mkdir(parents=True)
    out = _in_read_only(tmp_path, key)
    assert out["got"] == ["new a7", "new a7"]              # compiled once, then served from memory
    assert out["stats"]["compiles"] == 1
    (warning,) = out["warnings"]
    assert str(tmp_path) in warning and "TORCHNEURON_CACHE_DIR" in warning
