"""Two-level compile cache: an in-memory LRU of loaded executables over an on-disk store of artifacts.

On disk, entries live at ``<dir>/<key[:2]>/<key>.bin`` and are written atomically (temp file in the same
directory, fsync, ``os.replace``). Each entry carries a header with a magic string and the SHA-256 of its
payload; an entry that fails the check (truncated, overwritten, foreign) is deleted and recompiled, with a
warning, never an error. Compilation of one key is serialised across processes with an ``fcntl`` lock on
``<key>.lock``, so N processes that miss together compile once and the others read the result.

A directory that cannot be written (a read-only mount, a container image, a shared CI volume) still serves
its hits; misses are compiled and kept in memory, with one warning per directory naming it and the variable
that moves it. An entry that cannot be read at all (it became a directory, a symlink loop) is removed and
rewritten, or bypassed when the directory is read-only, so it is never recompiled on every call.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
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


# Directories already reported as unwritable: one warning per directory and process, whichever cache saw it.
_REPORTED_UNWRITABLE: set[Path] = set()
_REPORTED_LOCK = threading.Lock()


class DiskCache:
    """Content-addressed artifact store shared by every process that uses the same directory."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.writable = True  # until a write fails; then hits are still read and misses stay in memory

    def _path(self, key: str, suffix: str) -> Path:
        return self.root / key[:2] / f"{key}{suffix}"

    def _unwritable(self, e: OSError) -> None:
        self.writable = False
        with _REPORTED_LOCK:
            if self.root in _REPORTED_UNWRITABLE:
                return
            _REPORTED_UNWRITABLE.add(self.root)
        warnings.warn(f"torchneuron compile cache: {self.root} is not writable ({e}); programs found there are "
                      "still used, new ones are compiled and kept in memory for this process only. Set "
                      f"{_env.CACHE_DIR} to a writable directory to keep them.", stacklevel=4)

    def get(self, key: str) -> bytes | None:
        path = self._path(key, ".bin")
        try:
            blob = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # no entry, or no cache directory at all
            return None
        except OSError as e:
            self._heal(path, e)
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

    def _heal(self, path: Path, error: OSError) -> None:
        """An entry that cannot be read (a directory, a symlink loop): removed, so the recompiled program
        replaces it; left alone when the directory is read-only (the caller compiles in memory)."""
        try:
            _remove(path)
        except OSError as e:
            self._unwritable(e)
            return
        warnings.warn(f"torchneuron compile cache: cannot read entry {path} ({error}); removed it, recompiling",
                      stacklevel=4)

    def put(self, key: str, payload: bytes) -> bool:
        """Stores the entry; False (after one warning per directory) when the directory cannot be written."""
        if not self.writable:
            return False
        path = self._path(key, ".bin")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:16]}.", suffix=".tmp")
        except OSError as e:
            self._unwritable(e)
            return False
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC)
                f.write(hashlib.sha256(payload).digest())
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)  # os.replace cannot overwrite a directory squatting on the entry's name
            os.replace(tmp, path)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            self._unwritable(e)
            return False
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return True

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Exclusive across processes (``fcntl.flock``) and threads (flock is per open file). In a directory
        that cannot be written there is nothing to protect: no lock, each process compiles for itself."""
        f = self._open_lock(key)
        if f is None:
            yield
            return
        with f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    def _open_lock(self, key: str) -> Any:
        if not self.writable:
            return None
        path = self._path(key, ".lock")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return open(path, "a+b")  # noqa: SIM115 - closed by lock()
        except OSError as e:
            self._unwritable(e)
            return None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


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
            disk.put(key, blob)  # warns once and keeps going when the directory cannot be written
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
