"""Bulk resolve into NumPy arrays, without a Python object per window."""
import math

import numpy as np

import lapse
from conftest import MS, busy


def test_windows_ended_into_durations_resolve_into_arrays(cpu):
    n = 1000
    ds = lapse.Durations()
    ds.reserve(n)
    for i in range(n):
        w = cpu.profile_start(i % 2)
        assert cpu.profile_end(w, into=ds) is None
    assert len(ds) == n
    r = cpu.resolve(ds, timeout=30)
    assert r.final
    for a, dtype in ((r.start_ns, np.int64), (r.end_ns, np.int64), (r.state, np.uint8), (r.ns, np.float64),
                     (r.ms, np.float64), (r.ready, np.bool_)):
        assert a.shape == (n,) and a.dtype == dtype
    ready = r.ready
    assert ((r.state == lapse.STATE_READY) | (r.state == lapse.STATE_NOT_MEASURED)).all()
    assert (r.end_ns[ready] >= r.start_ns[ready]).all()
    assert (r.method[ready] == lapse.METHOD_DEVICE).all()
    assert np.isnan(r.ms[~ready]).all()


def test_not_measured_is_nan_in_the_arrays_never_zero(cpu):
    measured = cpu.profile(0, lambda: busy(cpu, 0, 2 * MS), flush=True)
    given_up = cpu.profile(0, lambda: busy(cpu, 0, 1 * MS))
    given_up.abandon()
    failed = cpu.profile(cpu.info.stream_count, lambda: None)
    r = cpu.resolve([measured, given_up, failed], timeout=30)
    assert list(r.state) == [lapse.STATE_READY, lapse.STATE_NOT_MEASURED, lapse.STATE_FAILED]
    assert list(r.ready) == [True, False, False]
    assert r.ms[0] >= 2 * 0.95
    assert math.isnan(r.ms[1]) and math.isnan(r.ms[2]) and math.isnan(r.ns[1])
    # The Python objects were resolved in place too.
    assert measured.ready and measured.resolve().ns == r.end_ns[0] - r.start_ns[0]


def test_with_blocks_can_end_into_a_list(cpu):
    ds = lapse.Durations()
    for _ in range(10):
        with cpu.window("step", stream=0, into=ds):
            busy(cpu, 0, 0)
    r = cpu.resolve(ds)
    assert r.final and len(r.ms) == 10


def test_a_durations_list_keeps_its_devices_alive():
    ds = lapse.Durations()
    dev = lapse.Runtime().open()
    for _ in range(3):
        with dev.window(into=ds):
            dev.submit(0, lambda: None)
    del dev  # the list still holds pending durations of it
    del ds   # they release their windows before the device goes
