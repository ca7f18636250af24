"""Two-level compile cache: an in-memory LRU of loaded executables over an on-disk store of artifacts.

On disk, entries live at ``<dir>/<key[:2]>/<key>.bin`` and are written atomically (temp file in the same
directory, fsync, ``os.replace``). Each entry carries a header with a magic string and the SHA-256 of its
payload; an entry that fails the check (truncated, overwritten, foreign) is deleted and recompiled, with a
warning, never an error. Compilation of one key is serialised across processes with an ``fcntl`` lock on
``<key>.lock``, so N processes that miss together compile once and the others read the result.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .. import _env

_MAGIC = b"TNCACHE1"
_HEADER = len(_MAGIC) + 32


def default_cache_dir() -> Path:
    configured = _env.get(_env.CACHE_DIR)
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchneuron"


class DiskCache:
    """Content-addressed artifact store shared by every process that uses the same directory."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def _path(self, key: str, suffix: str) -> Path:
        return self.root / key[:2] / f"{key}{suffix}"

    def get(self, key: str) -> bytes | None:
        path = self._path(key, ".bin")
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            warnings.warn(f"torchneuron compile cache: cannot read {path} ({e}); recompiling", stacklevel=3)
            return None
        payload = blob[_HEADER:]
        checksum = blob[len(_MAGIC):_HEADER]
        if len(blob) < _HEADER or blob[: len(_MAGIC)] != _MAGIC or checksum != hashlib.sha256(payload).digest():
            warnings.warn(f"torchneuron compile cache: corrupt entry {path} (checksum mismatch); "
                          "deleting it and recompiling", stacklevel=3)
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        return payload

    def put(self, key: str, payload: bytes) -> None:
        path = self._path(key, ".bin")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:16]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC)
                f.write(hashlib.sha256(payload).digest())
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Exclusive across processes (``fcntl.flock``) and threads (flock is per open file)."""
        path = self._path(key, ".lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a+b") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)


class CompileCache:
    """``get_or_compile(key, compile, load)``: memory hit, else disk hit, else compile under the lock.

    ``compile() -> bytes`` produces the serialised artifact; ``load(bytes) -> executable`` turns it into
    something callable. Statistics (``hits_memory``, ``hits_disk``, ``compiles``, ``corrupt``) are kept for
    tests and benchmarks.
    """

    def __init__(self, root: Path | None = None, max_entries: int = 4096):
        self._root = Path(root) if root is not None else None
        self._disks: dict[Path, DiskCache] = {}
        self.max_entries = max_entries
        self._mem: OrderedDict[str, Any] = OrderedDict()
        self._mutex = threading.Lock()
        self.stats = {"hits_memory": 0, "hits_disk": 0, "compiles": 0}

    @property
    def disk(self) -> DiskCache:
        root = self._root if self._root is not None else default_cache_dir()
        d = self._disks.get(root)
        if d is None:
            d = self._disks[root] = DiskCache(root)
        return d

    def clear_memory(self) -> None:
        with self._mutex:
            self._mem.clear()

    def _remember(self, key: str, exe: Any) -> Any:
        with self._mutex:
            self._mem[key] = exe
            self._mem.move_to_end(key)
            while len(self._mem) > self.max_entries:
                self._mem.popitem(last=False)
        return exe

    def get_or_compile(self, key: str, compile: Callable[[], bytes], load: Callable[[bytes], Any]) -> Any:
        with self._mutex:
            exe = self._mem.get(key)
            if exe is not None:
                self._mem.move_to_end(key)
                self.stats["hits_memory"] += 1
                return exe
        disk = self.disk
        blob = disk.get(key)
        if blob is not None:
            exe = self._load_or_none(key, blob, load)
            if exe is not None:
                self.stats["hits_disk"] += 1
                return self._remember(key, exe)
        with disk.lock(key):
            blob = disk.get(key)  # another process may have compiled it while we waited
            if blob is not None:
                exe = self._load_or_none(key, blob, load)
                if exe is not None:
                    self.stats["hits_disk"] += 1
                    return self._remember(key, exe)
            blob = compile()
            self.stats["compiles"] += 1
            exe = load(blob)
            try:
                disk.put(key, blob)
            except OSError as e:
                warnings.warn(f"torchneuron compile cache: cannot write to {disk.root} ({e}); "
                              f"set {_env.CACHE_DIR} to a writable directory", stacklevel=2)
        return self._remember(key, exe)

    def _load_or_none(self, key: str, blob: bytes, load: Callable[[bytes], Any]) -> Any:
        try:
            return load(blob)
        except Exception as e:  # an artifact from a different build, or bytes that pass the checksum but not the loader
            warnings.warn(f"torchneuron compile cache: entry {key[:16]}… cannot be loaded ({type(e).__name__}: {e}); "
                          "recompiling", stacklevel=3)
            with contextlib.suppress(OSError):
                self.disk._path(key, ".bin").unlink()
            return None
