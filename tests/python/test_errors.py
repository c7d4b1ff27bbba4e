"""Errors are lapse.Error exceptions carrying the lapse status and a message
that names the cause; nothing crashes on a closed device."""
import pytest

import lapse


def test_a_bad_config_names_file_line_and_column():
    with pytest.raises(lapse.Error) as e:
        lapse.Config.from_string("[backend]\nplugin = \n", "bad.toml")
    assert e.value.status_name == "LAPSE_ERROR_CONFIG" and e.value.status == -9
    assert "bad.toml:2:" in str(e.value)


def test_an_unknown_key_is_refused_at_open():
    rt = lapse.Runtime()
    with pytest.raises(lapse.Error) as e:
        rt.open(lapse.Config.from_string('[backend]\nplugin = "cpu"\nstreamz = 2\n', "typo.toml", "/"))
    assert e.value.status_name == "LAPSE_ERROR_CONFIG"
    assert "typo.toml:3:" in e.value.message and "streamz" in e.value.message


def test_an_unknown_plugin_is_a_load_error():
    with pytest.raises(lapse.Error) as e:
        lapse.Runtime().open(lapse.Config.from_string('[backend]\nplugin = "no_such_plugin"\n'))
    assert e.value.status_name == "LAPSE_ERROR_LOAD" and "no_such_plugin" in str(e.value)


def test_lapse_config_names_the_variable(monkeypatch):
    monkeypatch.setenv("LAPSE_CONFIG", "/nonexistent/env.toml")
    with pytest.raises(lapse.Error) as e:
        lapse.Runtime().open()
    assert "LAPSE_CONFIG=/nonexistent/env.toml" in str(e.value)
    monkeypatch.delenv("LAPSE_CONFIG")
    with lapse.Runtime().open() as dev:
        assert dev.info.plugin == "cpu"


def test_a_closed_device_raises_closed(cpu):
    cpu.close()
    for call in (cpu.sync, lambda: cpu.info, lambda: cpu.submit(0, lambda: None)):
        with pytest.raises(lapse.Error) as e:
            call()
        assert e.value.status_name == "LAPSE_ERROR_CLOSED" and "closed" in str(e.value)
    with cpu.window() as w:  # the block still runs; the window reports
        pass
    with pytest.raises(lapse.Error) as e:
        w.duration.resolve()
    assert e.value.status_name == "LAPSE_ERROR_CLOSED"
    cpu.close()  # idempotent


def test_a_window_of_another_device_is_refused(cpu):
    with lapse.Runtime().open() as other:
        w = other.profile_start(0)
        d = cpu.profile_end(w)
        assert d.failed and "another device" in d.error_message
        assert w.open  # left for its own device
        assert other.profile_end(w).resolve(timeout=30) is not None


def test_error_is_a_runtime_error():
    assert issubclass(lapse.Error, RuntimeError)


def test_closing_with_a_duration_still_pending_is_safe():
    dev = lapse.Runtime().open()
    pending = dev.profile(0, lambda: dev.submit(0, lambda: None), name="late")
    window = dev.profile_start(0)
    dev.close()  # the windows and durations keep what they need alive
    assert pending.resolve(timeout=30) is not None
    assert dev.profile_end(window).resolve(timeout=30) is not None
    del dev, pending, window  # the device itself goes with the last of them
