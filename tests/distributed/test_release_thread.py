"""What a collective kept alive is released on a user thread (workers/release_thread.py), and a job that
exits right after a collective exits cleanly."""

from .launch import torchrun


def test_collectives_release_tensors_on_user_threads(tmp_path):
    reports = torchrun("release_thread.py", 2, tmp_path)
    for rep in reports:
        assert not rep["failed"], "\n".join(f"{k}:\n{v}" for k, v in rep["failed"].items())
        assert rep["values"]["exit_right_after_a_collective"] == [0.5] * 4
