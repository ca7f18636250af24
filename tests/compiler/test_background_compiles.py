"""The background compile thread: a task runs once, on the worker or on whoever needs it first; its error
reaches the caller; at exit queued tasks are dropped and a running one is finished."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from torchneuron.compiler import background


def test_result_is_the_value_and_the_task_runs_once():
    calls = []
    task = background.submit(lambda: calls.append(threading.current_thread().name) or 42)
    assert task.result() == 42 and task.result() == 42
    assert len(calls) == 1


def test_a_task_not_started_runs_on_the_thread_that_needs_it():
    gate = threading.Event()
    blocker = background.submit(gate.wait)  # holds the worker
    ran_on = []
    waiting = background.submit(lambda: ran_on.append(threading.current_thread()))
    waiting.result()  # not reached by the worker yet: runs here instead of waiting behind the blocker
    assert ran_on == [threading.current_thread()]
    gate.set()
    blocker.result()


def test_the_error_of_a_background_task_is_raised_to_the_caller():
    def fails():
        raise ValueError("the module does not compile")

    task = background.submit(fails)
    with pytest.raises(ValueError, match="does not compile"):
        task.result()
    assert background.on_worker() is False


def test_exit_drops_queued_tasks_and_finishes_the_running_one(tmp_path):
    marker = tmp_path / "finished"
    script = (
        "import threading, time\n"
        "from torchneuron.compiler import background\n"
        "started = threading.Event()\n"
        "def slow():\n"
        "    started.set(); time.sleep(0.5)\n"
        f"    open({str(marker)!r}, 'w').write('done')\n"
        "background.submit(slow)\n"
        "for _ in range(3):\n"
        f"    background.submit(lambda: open({str(tmp_path / 'never')!r}, 'w'))\n"
        "started.wait()\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert marker.read_text() == "done"  # the running compile was not cut off
    assert not (tmp_path / "never").exists()  # the queued ones were dropped


def test_a_forked_child_runs_its_tasks_itself(tmp_path):
    script = (
        "import os, threading\n"
        "from torchneuron.compiler import background\n"
        "gate = threading.Event()\n"
        "background.submit(gate.wait)  # the parent's worker is busy at the fork\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(0 if background.submit(lambda: 7).result() == 7 else 1)\n"
        "gate.set()\n"
        "_, status = os.waitpid(pid, 0)\n"
        "raise SystemExit(os.waitstatus_to_exitcode(status))\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_the_worker_runs_its_aten_ops_on_one_openmp_thread():
    """A team of the worker's own would make libgomp stop spinning between the main thread's parallel regions
    (more managed threads than cores): every training step would pay futex wake-ups."""
    import torch

    main = torch.get_num_threads()
    gate = threading.Event()
    background.submit(gate.wait)  # the worker is running (and set up) once this task starts
    on_worker = background.submit(torch.get_num_threads)
    gate.set()
    while not on_worker._done.wait(0.01):  # let the worker run it, not this thread
        pass
    assert on_worker.result() == 1
    assert torch.get_num_threads() == main
