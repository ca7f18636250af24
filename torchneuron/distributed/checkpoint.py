"""``save_atomic``: a ``torch.distributed.checkpoint`` save that never damages the previous checkpoint.

``dcp.save(state, checkpoint_id=path)`` writes its data files over the ones already in ``path`` and the
``.metadata`` last, so a save killed midway (SIGKILL, preemption, OOM) leaves the old metadata describing
new, partial data: loading then silently returns a mix. This helper writes the whole checkpoint to a staging
directory next to ``path`` and puts it in place only after every rank finished writing:

1. every rank saves into ``<path>.tmp-<pid>`` (the pid of rank 0, shared through the process group);
2. rank 0 moves the old ``path`` aside to ``<path>.old-<pid>``, renames the staging directory to ``path``,
   syncs the parent directory, and only then removes the old checkpoint;
3. a barrier, so no rank returns before ``path`` is the new checkpoint.

A save killed during 1 leaves ``path`` untouched (and a ``.tmp-`` directory to delete); killed between the
two renames of 2, the previous checkpoint is the ``.old-`` directory. The directory must be on a filesystem
every rank sees (as ``dcp.save`` itself requires for a shared checkpoint).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any


def save_atomic(state_dict: dict[str, Any], path: str | os.PathLike, *, process_group: Any = None,
                **save_kwargs: Any) -> Any:
    """``dcp.save(state_dict, checkpoint_id=path, ...)``, atomically: ``path`` holds either the previous
    checkpoint or the complete new one, never a mix. Returns what ``dcp.save`` returns (the metadata).
    Call it on every rank, like ``dcp.save``; other keyword arguments (``planner``, ...) are passed on."""
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp

    final = Path(path)
    distributed = dist.is_available() and dist.is_initialized()
    leader = not distributed or dist.get_rank(process_group) == 0
    token = [os.getpid()]
    if distributed:  # every rank must write into the same staging directory: rank 0's pid names it
        dist.broadcast_object_list(token, src=dist.get_global_rank(process_group or dist.group.WORLD, 0),
                                   group=process_group)
    staging = final.with_name(f"{final.name}.tmp-{token[0]}")
    aside = final.with_name(f"{final.name}.old-{token[0]}")
    if leader:
        shutil.rmtree(staging, ignore_errors=True)  # a leftover of a killed save with the same pid
    if distributed:
        dist.barrier(group=process_group)
    try:
        metadata = dcp.save(state_dict, checkpoint_id=str(staging), process_group=process_group, **save_kwargs)
    except BaseException:
        if leader:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    if leader:
        _swap_in(staging, final, aside)
    if distributed:
        dist.barrier(group=process_group)
    return metadata


def _swap_in(staging: Path, final: Path, aside: Path) -> None:
    had_old = final.exists()
    if had_old:
        shutil.rmtree(aside, ignore_errors=True)  # stale: final is the good copy
        os.replace(final, aside)
    os.replace(staging, final)
    _sync_dir(final.parent)
    if had_old:
        shutil.rmtree(aside, ignore_errors=True)


def _sync_dir(directory: Path) -> None:
    """The renames reach the disk before the old checkpoint is deleted."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
