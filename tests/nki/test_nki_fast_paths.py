"""Shortcuts the simulator takes on hot paths give what the general code gives: two-range indexing of 2-D
views (`NkiTensor._two_ranges`) against `_basic`, integer and affine keys (`_affine_view`) and `t[...]`
against the normalising path, storage layouts against a fresh computation, and the BLAS thread count a
launch sets once (`blas.launch_scope`) against per-matmul setting, with the test for a spare core."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from torchneuron.nki import dtypes
from torchneuron.nki.core import blas
from torchneuron.nki.core.buffers import HBM, PSUM, SBUF, Storage
from torchneuron.nki.core.indexing import IndexArray, arange, mgrid
from torchneuron.nki.core.tensor import NkiTensor
from torchneuron.nki.errors import NkiError

_BOUNDS = (None, 0, 1, 3, 7, 8, -1, -3, 9, -9)


def _message(e: Exception) -> str:
    """The error without its source location (the line that raised differs)."""
    text = str(e)
    return text[text.index("[err_"):]


def _views():
    """2-D views of several kinds: whole tiles, transposed and sliced views, on chip and in HBM."""
    for buffer, paxis in ((SBUF, 0), (PSUM, 0), (HBM, 0), (SBUF, 1)):
        shape = (8, 8) if paxis == 0 else (2, 8, 8)
        whole = NkiTensor.whole(Storage(shape, dtypes.float32, buffer, "t", paxis))
        if paxis == 1:
            yield whole._basic((1,))  # a block of a block tensor: 2-D, partition dim 0
            continue
        yield whole
        yield whole.derive((8, 8), (1, 8), 0, 1 if buffer.on_chip else 0)  # transposed
        yield whole._basic((slice(2, 6), slice(1, 7)))


@pytest.mark.parametrize("view", list(_views()), ids=lambda v: f"{v.buffer.name}-{v.strides}-{v.offset}")
def test_two_ranges_give_what_basic_gives(view) -> None:
    for a0, b0, a1, b1 in itertools.product(_BOUNDS, repeat=4):
        key = (slice(a0, b0), slice(a1, b1))
        try:
            want = view._basic(key)
        except NkiError as e:
            with pytest.raises(type(e)) as got:
                view[key]
            assert _message(got.value) == _message(e)
            continue
        got = view[key]
        assert type(got) is type(want)
        for name in NkiTensor.__slots__:
            assert _same(getattr(got, name), getattr(want, name)), name


@pytest.mark.parametrize("view", list(_views()), ids=lambda v: f"{v.buffer.name}-{v.strides}-{v.offset}")
def test_a_whole_view_access_gives_what_normalising_the_ellipsis_gives(view) -> None:
    want = view._basic(view._normalise_key(...))
    got = view[...]
    for name in NkiTensor.__slots__:
        assert _same(getattr(got, name), getattr(want, name)), name


def _same(a, b) -> bool:
    """Equal attributes; index arrays and gather bounds (a tail slice past an HBM tensor's end) by value."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_two_ranges_leave_other_keys_to_basic() -> None:
    t = NkiTensor.whole(Storage((8, 8), dtypes.float32, SBUF, "t"))
    for key in ((slice(0, 8, 2), slice(None)), (slice(np.int64(1), 4), slice(None)), (slice(True, 4), slice(0, 2))):
        assert t._two_ranges(key) is None
        assert t[key].key() == t._basic(key).key()


def _affine_keys(ndim: int):
    """Keys of integers and nl.mgrid / nl.arange expressions: in and out of range, reversed and repeated
    axes, negative steps, fewer grid axes than dimensions, 1-element ranges, runtime-free and raw aranges."""
    grid2 = mgrid[0:4, 0:3]
    grid3 = mgrid[0:2, 0:4, 0:3]
    col, row = arange(4)[:, None], arange(3)[None, :]
    exprs = [grid2.p, grid2.x, 2 * grid2.x + 1, grid2.p + 4, grid2.x * -1 + 2, grid3.x, grid3.y, col, row,
             col + 5, mgrid[0:1, 0:3].p, arange(3)]
    for key in itertools.product(exprs + [0, 1, -1, 9], repeat=ndim):
        if any(type(k) is IndexArray for k in key):
            yield key


@pytest.mark.parametrize("ndim", [2, 3])
def test_affine_views_give_what_the_general_path_gives(ndim) -> None:
    """`NkiTensor._affine_view` (integers and affine expressions straight to a strided view) against the
    normalise / varying / broadcast path it shortcuts, errors included."""
    shape = (8, 8) if ndim == 2 else (3, 8, 8)
    for buffer, paxis in ((SBUF, 0), (HBM, 0), (SBUF, 1)):
        if paxis >= ndim:
            continue
        t = NkiTensor.whole(Storage(shape, dtypes.float32, buffer, "t", paxis))
        for key in _affine_keys(ndim):
            try:
                want = t._affine_gather(t._normalise_key(key))
            except NkiError as e:
                with pytest.raises(type(e)) as got:
                    t[key]
                assert _message(got.value) == _message(e)
                continue
            got = t[key]
            for name in NkiTensor.__slots__:
                assert _same(getattr(got, name), getattr(want, name)), (key, name)


@pytest.mark.parametrize("shape, paxis", [((8, 4), 0), ((2, 8, 4), 1), ((), 0), ((5,), 0), ((3, 0, 2), 1)])
def test_storage_layouts_match_a_fresh_computation(shape, paxis) -> None:
    for given in (shape, tuple(np.int64(s) for s in shape), list(shape)):
        st = Storage(given, dtypes.float32, SBUF, "t", paxis)
        assert st.shape == shape and all(type(s) is int for s in st.shape)
        assert st.partitions == (shape[paxis] if shape else 1)
        assert st.partition_stride == int(np.prod(shape[paxis + 1:], dtype=np.int64))
        assert st.size == int(np.prod(shape, dtype=np.int64)) == st.data.size
        t = NkiTensor.whole(st)
        fresh = NkiTensor(st, st.shape, t.strides, 0, t.pdim)
        for name in NkiTensor.__slots__:
            assert getattr(t, name) == getattr(fresh, name) or (getattr(t, name) is None is getattr(fresh, name))


needs_setter = pytest.mark.skipif(blas._SETTER is None, reason="no openblas_set_num_threads_local")


@needs_setter
def test_a_launch_sets_one_blas_thread_once_and_restores_the_count(monkeypatch) -> None:
    before = blas._SETTER(3)
    try:
        assert isinstance(blas.single_thread(), blas._Threads)  # outside a launch: set per product
        with blas.launch_scope():
            assert blas.single_thread() is blas._NULL
            assert blas._SETTER(1) == 1  # the scope runs products on one thread
            monkeypatch.setattr(blas, "_cores_idle", lambda: True)
            large = blas.single_thread(blas._MANY_MACS)
            assert isinstance(large, blas._Threads) and large.count == 3  # idle cores: the count from before
            with large:
                assert blas._SETTER(3) == 3
            assert blas._SETTER(1) == 1
            with blas.launch_scope():  # nested (a kernel's launch inside a launch is refused, but stay sound)
                assert blas.single_thread() is blas._NULL
            assert blas.single_thread(blas._MANY_MACS).count == 3
        assert blas._SETTER(3) == 3  # restored on exit
        assert blas.single_thread(blas._MANY_MACS) is blas._NULL  # outside a launch: as NumPy decides
    finally:
        blas._SETTER(before)


def test_whole_tile_writes_set_the_written_flags_of_exactly_the_elements_written() -> None:
    st = Storage((4, 8), dtypes.float32, PSUM, "acc")
    whole = NkiTensor.whole(st)
    part = whole[0:2, 0:8]
    row = whole._basic((slice(0, 1), slice(None)))
    spread = row.derive((4, 8), (0, 1), 0, 0)  # offset 0 and as many elements as the storage, but one row
    assert whole.covers_storage() and not part.covers_storage() and not spread.covers_storage()
    part.write(np.ones((2, 8), np.float32))
    assert st.written.reshape(4, 8)[:2].all() and not st.written.reshape(4, 8)[2:].any()
    fresh = Storage((4, 8), dtypes.float32, PSUM, "acc2")
    NkiTensor.whole(fresh)._basic((slice(0, 1), slice(None))).derive((4, 8), (0, 1), 0, 0).write(
        np.full((4, 8), 3.0, np.float32))  # as many elements as the storage, but all in row 0
    assert fresh.written.reshape(4, 8)[0].all() and not fresh.written.reshape(4, 8)[1:].any()
    whole.write(np.full((4, 8), 2.0, np.float32))
    assert st.written.all() and (st.data == 2.0).all()


def test_a_target_hashes_as_its_fields_do() -> None:
    import dataclasses

    from torchneuron.nki import hardware

    for target in (hardware.TRN1, hardware.TRN2):
        twin = dataclasses.replace(target)  # equal, another object, its hash not made yet
        assert twin == target and twin is not target
        assert hash(twin) == hash(target) == hash(tuple(getattr(target, f.name) for f in dataclasses.fields(target)))
        assert {target: 1}[twin] == 1
        assert dataclasses.replace(target, pmax=64) != target


@pytest.mark.parametrize(("others", "spare"), [(0.0, True), (0.3, True), (0.6, False), (1.0, False)])
def test_a_second_blas_thread_only_when_other_processes_leave_a_core(monkeypatch, others, spare) -> None:
    """The machine's busy time less this process's own: a simulator whose own BLAS threads keep two cores
    busy still sees a spare core; another process using half a core or more takes it away."""
    clock = {"now": 100.0, "busy": 50.0, "own": 10.0}
    monkeypatch.setattr(blas, "_usable_cores", lambda: 2)
    monkeypatch.setattr(blas, "_machine_busy_seconds", lambda: clock["busy"])
    monkeypatch.setattr(blas.time, "monotonic", lambda: clock["now"])
    monkeypatch.setattr(blas.time, "process_time", lambda: clock["own"])
    monkeypatch.setattr(blas, "_idle", (0.0, False, None, 0.0))
    assert blas._cores_idle() is False  # one sample says nothing yet
    clock.update(now=102.0, own=14.0, busy=50.0 + 4.0 + 2.0 * others)  # two seconds: this process used 2 cores
    assert blas._cores_idle() is spare
    clock.update(now=102.5, busy=1e9)  # asked again within the second: the same answer, not a new sample
    assert blas._cores_idle() is spare


def test_without_proc_stat_the_load_average_decides(monkeypatch) -> None:
    monkeypatch.setattr(blas, "_usable_cores", lambda: 4)
    monkeypatch.setattr(blas, "_machine_busy_seconds", lambda: None)
    monkeypatch.setattr(blas, "_idle", (0.0, False, None, 0.0))
    monkeypatch.setattr(blas.os, "getloadavg", lambda: (2.5, 0.0, 0.0))
    assert blas._cores_idle() is True
    monkeypatch.setattr(blas, "_idle", (0.0, False, None, 0.0))
    monkeypatch.setattr(blas.os, "getloadavg", lambda: (3.2, 0.0, 0.0))
    assert blas._cores_idle() is False
