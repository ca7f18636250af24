import warnings

import pytest

import torchneuron  # noqa: F401


def pytest_configure(config):
    # The lowering coverage policy warns once per op with no StableHLO lowering; eager training does not care.
    config.addinivalue_line("filterwarnings", "ignore::UserWarning")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
