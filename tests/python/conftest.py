"""What the Python tests share: opening devices from the conformance configs."""
import os
import time

import pytest

import lapse

CONFIGS = os.environ.get("LAPSE_TEST_CONFIGS", os.path.join(os.path.dirname(__file__), "..", "conformance", "configs"))
MS = 1e-3


def open_config(name):
    """Opens configs/<name>.toml; skips the test where that backend is unavailable."""
    rt = lapse.Runtime()
    try:
        return rt.open(os.path.join(CONFIGS, name + ".toml"))
    except lapse.Error as e:
        if e.status_name == "LAPSE_ERROR_UNAVAILABLE":
            pytest.skip(f"{name}: unavailable here: {e}")
        raise


@pytest.fixture
def cpu():
    with open_config("cpu_stream") as dev:
        yield dev


def busy(dev, stream, seconds):
    """Work on the stream that takes at least `seconds` (a sleep: it lets the GIL go)."""
    dev.submit(stream, lambda: time.sleep(seconds))
