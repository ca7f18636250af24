import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test compiles into a private cache directory (never ~/.cache)."""
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "tn-cache"))
