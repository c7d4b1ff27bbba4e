"""The closure form and with-blocks with Python exceptions: the window is
abandoned and the exception propagates, unchanged."""
import pytest

import lapse
from conftest import MS, busy


class WorkFailed(Exception):
    pass


def test_a_raising_closure_abandons_its_window_and_the_exception_propagates(cpu):
    def closure():
        busy(cpu, 0, 1 * MS)
        raise WorkFailed("closure failed")

    with pytest.raises(WorkFailed, match="closure failed"):
        cpu.profile(0, closure, name="failing")
    # The device is still usable, and a window after it measures.
    assert cpu.profile(0, lambda: busy(cpu, 0, 1 * MS), flush=True).resolve(timeout=30).ns >= 0


def test_a_raising_with_block_abandons_its_window(cpu):
    scope = cpu.window("failing", stream=0)
    with pytest.raises(WorkFailed):
        with scope:
            busy(cpu, 0, 1 * MS)
            raise WorkFailed("block failed")
    assert scope.duration.state == "not measured"
    assert scope.duration.resolve() is None


def test_the_closure_form_measures_its_work(cpu):
    d = cpu.profile(0, lambda: busy(cpu, 0, 3 * MS), name="work", flush=True)
    assert d.name == "work"
    iv = d.resolve(timeout=30)
    assert iv.ns >= 3e6 * 0.95 and d.method == "device"


def test_an_exception_in_submitted_work_comes_back_from_sync(cpu):
    def work():
        raise ValueError("work failed on the stream")

    cpu.submit(0, work)
    with pytest.raises(ValueError, match="work failed on the stream"):
        cpu.sync()
    cpu.sync()  # reported once
