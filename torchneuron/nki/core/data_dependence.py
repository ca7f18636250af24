"""Whether tensor values steer the kernel instance running on this thread: an indirect index, a dynamic
offset or a register loaded from a tile decides addresses (and so the instructions' cost and live ranges)
from data. Such a launch is not a function of its signature alone, so `nki.launch_signatures` never takes
it as a repeat. A leaf module: views and registers report here, the launch asks."""

from __future__ import annotations

import threading

_local = threading.local()


def mark() -> None:
    _local.steered = True


def begin() -> None:
    _local.steered = False


def steered() -> bool:
    return getattr(_local, "steered", False)
