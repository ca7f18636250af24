import pytest
from hypothesis import HealthCheck, settings

import torchneuron  # noqa: F401

settings.register_profile(
    "neuron", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile("neuron")


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.filterwarnings("ignore::UserWarning"))
