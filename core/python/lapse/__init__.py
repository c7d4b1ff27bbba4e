"""lapse: profiling windows over pluggable backends, from Python.

    import lapse
    rt = lapse.Runtime()
    dev = rt.open()                      # LAPSE_CONFIG, else the builtin CPU backend
    with dev.window("step", stream=0) as w:
        dev.submit(0, work)              # work() runs on the stream
    print(w.duration.resolve())          # an Interval, or None when not measured
    rt.record_into("run.lapse-capture")  # devices opened from now on record every named window

The extension (_lapse) binds the C++ API with pybind11; see docs/python.md.
"""
from ._lapse import (  # noqa: F401  (the public names)
    ALL_STREAMS,
    CAP_BATCHING,
    CAP_DEVICE_CLOCK,
    CAP_NESTED,
    CAP_OVERLAPPING,
    CAP_SPLIT_THREADS,
    METHOD_DEVICE,
    METHOD_NONE,
    METHOD_SYSTEM,
    STATE_FAILED,
    STATE_NOT_MEASURED,
    STATE_PENDING,
    STATE_READY,
    Capture,
    CapturedWindow,
    CaptureReader,
    CaptureStats,
    Config,
    Device,
    DeviceInfo,
    Duration,
    Durations,
    Error,
    Interval,
    Name,
    Resolution,
    Runtime,
    Window,
    WindowScope,
)

__all__ = [name for name in dir() if not name.startswith("_")]
