"""The window rules of the conformance suite, from Python, on several backends."""
import threading

import pytest

import lapse
from conftest import MS, busy, open_config

BACKENDS = ["cpu_stream", "cpu_inline", "forward_cpu_stream", "forward_fusion_cpu", "vulkan"]


@pytest.fixture(params=BACKENDS)
def dev(request):
    with open_config(request.param) as d:
        yield d


def device_clock(dev):
    return dev.info.has(lapse.CAP_DEVICE_CLOCK)


def supports(dev, cap):
    # Without a device clock every window is a system-time one: those nest,
    # overlap and split by construction.
    return not device_clock(dev) or dev.info.has(cap)


def must_resolve(dur):
    iv = dur.resolve(timeout=30)
    assert iv is not None, f"{dur!r}: {dur.error_message}"
    assert iv.ns >= 0 and iv.method != "none"
    return iv


def test_the_device_describes_itself(dev):
    assert dev.info.stream_count >= 1
    assert dev.info.name and dev.info.plugin


def test_a_with_block_times_its_work_and_says_how(dev):
    with dev.window("step", stream=0, flush=True) as w:
        busy(dev, 0, 3 * MS)
    iv = must_resolve(w.duration)
    assert iv.ns >= 3e6 * 0.95
    assert iv.method in ("device", "system")
    assert w.duration.method == iv.method
    if not device_clock(dev):
        assert iv.method == "system" and iv.domain == "host"


def test_windows_nest(dev):
    if not supports(dev, lapse.CAP_NESTED):
        pytest.skip("no CAP_NESTED")
    with dev.window("outer", flush=True) as outer:
        busy(dev, 0, 2 * MS)
        with dev.window("inner", flush=True) as inner:
            busy(dev, 0, 3 * MS)
        busy(dev, 0, 2 * MS)
    o, i = must_resolve(outer.duration), must_resolve(inner.duration)
    assert o.start_ns <= i.start_ns and i.end_ns <= o.end_ns
    assert i.ns >= 3e6 * 0.95 and o.ns >= 7e6 * 0.95


def test_windows_overlap(dev):
    if not supports(dev, lapse.CAP_OVERLAPPING):
        pytest.skip("no CAP_OVERLAPPING")
    a = dev.profile_start(0)
    busy(dev, 0, 3 * MS)
    b = dev.profile_start(0)
    busy(dev, 0, 3 * MS)
    da = dev.profile_end(a, flush=True)
    busy(dev, 0, 3 * MS)
    db = dev.profile_end(b, flush=True)
    ia, ib = must_resolve(da), must_resolve(db)
    assert ia.start_ns <= ib.start_ns <= ia.end_ns <= ib.end_ns
    assert ia.ns >= 6e6 * 0.95 and ib.ns >= 6e6 * 0.95


def test_a_split_pair_ends_on_another_thread(dev):
    if not supports(dev, lapse.CAP_SPLIT_THREADS):
        pytest.skip("no CAP_SPLIT_THREADS")
    stream = 1 if dev.info.stream_count > 1 else 0
    w = dev.profile_start(stream, "split")
    busy(dev, stream, 10 * MS)
    out = {}
    closer = threading.Thread(target=lambda: out.setdefault("d", dev.profile_end(w, flush=True)))
    closer.start()
    closer.join()
    assert not w.open
    assert must_resolve(out["d"]).ns >= 10e6 * 0.95


def test_an_abandoned_window_is_gone_and_not_measured(dev):
    w = dev.profile_start(0)
    busy(dev, 0, 1 * MS)
    dev.profile_abandon(w)
    assert not w.open
    again = dev.profile_end(w)  # ending it now reports, never measures
    assert again.failed and again.error_status == -2  # LAPSE_ERROR_INVALID_TOKEN
    with pytest.raises(lapse.Error) as e:
        again.resolve()
    assert e.value.status_name == "LAPSE_ERROR_INVALID_TOKEN"


def test_not_measured_is_none_never_zero(dev):
    given_up = dev.profile(0, lambda: busy(dev, 0, 1 * MS))
    given_up.abandon()
    assert given_up.resolve() is None
    assert given_up.state == "not measured" and given_up.method == "none"
    with dev.window() as empty:
        pass
    iv = empty.duration.resolve(timeout=30)
    if iv is None:
        assert empty.duration.state == "not measured"
    else:
        assert iv.ns >= 0 and iv.method != "none"


def test_system_time_fallback_on_a_backend_without_windows():
    with open_config("cpu_inline") as dev:
        w = dev.profile_start(0)
        assert w.kind == "system"
        busy(dev, 0, 5 * MS)
        iv = must_resolve(dev.profile_end(w))
        assert iv.method == "system" and iv.domain == "host" and iv.ns >= 5e6 * 0.95


def test_when_a_window_cannot_open_the_block_still_runs(dev):
    ran = []
    with dev.window(stream=dev.info.stream_count) as w:
        ran.append(True)
    assert ran
    assert w.duration.failed and w.duration.error_message
    with pytest.raises(lapse.Error):
        w.duration.resolve()
