"""`nki_ops.ops`, the name docs once gave the torch ops, still imports them: code written against it runs."""

from __future__ import annotations


def test_the_old_module_name_is_the_torch_ops():
    import nki_ops.ops as old
    import nki_ops.torch_ops as ops

    assert old.__all__ == ops.__all__
    assert all(getattr(old, name) is getattr(ops, name) for name in ops.__all__)
