"""Captures from Python: with one on, every named window is in the file
exactly once (also when its Duration is never looked at); with none, no
file; LAPSE_CAPTURE records a whole program; misuse raises lapse.Error
naming the cause."""
import os
import subprocess
import sys
import textwrap

import pytest

import lapse

N = 250


def read(path):
    reader = lapse.CaptureReader(str(path))
    windows = list(reader)
    return reader, windows


def named(windows, name):
    return [w for w in windows if w.name == name]


STEP = lapse.Name("step")  # interned once, as a module constant


def test_a_name_is_interned_once_and_compares_by_its_entry():
    assert lapse.Name("step") == STEP
    assert lapse.Name("other") != STEP
    assert STEP != "step"  # a Name is not its text
    assert STEP.text == "step"
    assert hash(lapse.Name("step")) == hash(STEP)
    assert repr(STEP) == "lapse.Name('step')"
    with pytest.raises(TypeError):
        lapse.Name(3)


def test_windows_named_by_a_name_are_recorded_under_its_text_every_way_they_open(tmp_path):
    path = tmp_path / "names.lapse-capture"
    rt = lapse.Runtime()
    with rt.open(lapse.Config.builtin()) as dev:
        cap = lapse.Capture(str(path), policy="block")
        dev.record_into(cap)
        for _ in range(N):
            with dev.window(STEP, stream=0):  # the with form
                pass
        for _ in range(N):
            dev.profile_end(dev.profile_start(0, STEP))  # the split form, its Duration dropped
        ran = []
        d = dev.profile(0, lambda: ran.append(1), name=STEP, flush=True)  # the closure form
        assert ran == [1]
        assert d.resolve(timeout=30) is not None
        with dev.window("step", stream=0):  # the same text as a str
            pass
        with dev.window(lapse.Name(""), stream=0):  # an empty Name names nothing: not recorded
            pass
        with pytest.raises(TypeError, match="a str, a lapse.Name or None"):
            dev.window(3)
        cap.close()
    _, windows = read(path)
    assert len(named(windows, "step")) == 2 * N + 2
    assert len(windows) == 2 * N + 2


def test_with_a_capture_on_every_named_with_block_is_in_the_file(tmp_path):
    path = tmp_path / "device.lapse-capture"
    rt = lapse.Runtime()
    with rt.open(lapse.Config.builtin()) as dev:
        cap = lapse.Capture(str(path), policy="block")  # nothing dropped, whatever the load
        assert dev.record_into(cap) is cap
        for _ in range(N):
            with dev.window("step", stream=0):  # its Duration is never asked for
                pass
        # Not recorded: unnamed windows, and a block that raised (abandoned).
        with dev.window(stream=0):
            pass
        with pytest.raises(ZeroDivisionError):
            with dev.window("raised", stream=0):
                1 / 0
        # Recorded once, also when the host resolves it too.
        with dev.window("resolved", stream=0, flush=True) as w:
            pass
        iv = w.duration.resolve(timeout=30)
        dev.record_into(None)
        with dev.window("after", stream=0):  # recording stopped
            pass
        cap.close()
        assert cap.stats.recorded == N + 1
        assert cap.stats.dropped == 0
    reader, windows = read(path)
    assert reader.complete
    assert reader.damage == []
    assert reader.dropped_total == 0
    assert len(named(windows, "step")) == N
    assert len(windows) == N + 1
    assert all(w.state == "ready" and w.ns >= 0 for w in windows)
    (resolved,) = named(windows, "resolved")
    assert (resolved.start_ns, resolved.end_ns) == (iv.start_ns, iv.end_ns)  # the same number


def test_with_no_capture_on_there_is_no_file(tmp_path, monkeypatch):
    monkeypatch.delenv("LAPSE_CAPTURE", raising=False)
    rt = lapse.Runtime()
    assert rt.capture is None
    with rt.open(lapse.Config.builtin()) as dev:
        for _ in range(N):
            with dev.window("step", stream=0):
                pass
    assert list(tmp_path.iterdir()) == []


def test_a_runtime_records_the_devices_it_opens_afterwards(tmp_path):
    path = tmp_path / "runtime.lapse-capture"
    rt = lapse.Runtime()
    cap = rt.record_into(str(path))  # a path: a Capture with the defaults
    assert isinstance(cap, lapse.Capture) and rt.capture is cap
    a, b = rt.open(lapse.Config.builtin()), rt.open(lapse.Config.builtin())
    for _ in range(N):
        with a.window("a", stream=0):
            pass
        b.profile(1, lambda: None, name="b")
    rt.record_into(None)
    assert rt.capture is None
    a.close()
    b.close()
    cap.close()
    reader, windows = read(path)
    assert reader.complete
    assert len(named(windows, "a")) + reader.dropped.get("a", 0) == N
    assert len(named(windows, "b")) + reader.dropped.get("b", 0) == N


CHILD = textwrap.dedent(
    """
    import sys
    import lapse
    dev = lapse.Runtime().open()
    for _ in range(int(sys.argv[1])):
        with dev.window("step", stream=0):
            pass
    """
)


def run_child(env_capture, tmp_path):
    env = dict(os.environ)
    env.pop("LAPSE_CAPTURE", None)
    env.pop("LAPSE_CONFIG", None)
    # The package this test imported, wherever the child's working directory is.
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(lapse.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([package_dir] + [p for p in [env.get("PYTHONPATH")] if p])
    if env_capture is not None:
        env["LAPSE_CAPTURE"] = str(env_capture)
    subprocess.run([sys.executable, "-c", CHILD, str(N)], env=env, cwd=str(tmp_path), check=True, timeout=120)


def test_lapse_capture_on_records_a_whole_program_and_closes_the_file_at_exit(tmp_path):
    path = tmp_path / "env.lapse-capture"
    run_child(path, tmp_path)
    reader, windows = read(path)
    assert reader.complete
    assert len(named(windows, "step")) + reader.dropped.get("step", 0) == N
    assert len(windows) >= 1


def test_lapse_capture_off_writes_no_file(tmp_path):
    run_child(None, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_capture_misuse_raises_lapse_errors_naming_the_cause(tmp_path):
    with pytest.raises(lapse.Error) as e:
        lapse.Capture("/nonexistent-lapse-dir/sub/run.lapse-capture")
    assert "/nonexistent-lapse-dir/sub/run.lapse-capture" in str(e.value)
    with pytest.raises(lapse.Error, match="policy 'sometimes'"):
        lapse.Capture(str(tmp_path / "x.lapse-capture"), policy="sometimes")
    with pytest.raises(lapse.Error) as e:
        lapse.CaptureReader(str(tmp_path / "missing.lapse-capture"))
    assert "missing.lapse-capture" in str(e.value)
    dev = lapse.Runtime().open(lapse.Config.builtin())
    dev.close()
    with pytest.raises(lapse.Error) as e:
        dev.record_into(str(tmp_path / "closed.lapse-capture"))
    assert e.value.status_name == "LAPSE_ERROR_CLOSED"
