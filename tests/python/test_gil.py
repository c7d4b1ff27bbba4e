"""The GIL is released while lapse waits (resolve, sync): a second Python
thread makes progress meanwhile, and Python work on the stream's thread
(which needs the GIL) runs while the caller waits for it."""
import threading
import time


class Counter(threading.Thread):
    """Counts as fast as it can until stopped: progress only with the GIL."""

    def __init__(self):
        super().__init__(daemon=True)
        self.count = 0
        self.stop = False

    def run(self):
        while not self.stop:
            self.count += 1


def spin(seconds):
    """Python work that holds the GIL while it runs (no sleep)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_resolve_releases_the_gil(cpu):
    # The stream's work waits on an event set by the caller's other thread,
    # then spins in Python: both need the GIL while resolve waits.
    go = threading.Event()
    with cpu.window("gil", flush=True) as w:
        cpu.submit(0, lambda: (go.wait(), time.sleep(0.2)))
    counter = Counter()
    counter.start()
    threading.Timer(0.05, go.set).start()
    before = time.perf_counter()
    iv = w.duration.resolve(timeout=30)
    waited = time.perf_counter() - before
    counter.stop = True
    counter.join()
    assert iv is not None and iv.ns >= 0.2e9 * 0.95
    assert waited >= 0.2
    assert counter.count > 1000, f"the other thread counted {counter.count} while resolve waited {waited:.3f} s"


def test_sync_releases_the_gil(cpu):
    # The stream's work waits for the caller's other thread, then spins in
    # Python: neither could happen while sync held the GIL.
    go = threading.Event()
    done = []
    cpu.submit(0, lambda: (go.wait(), spin(0.1), done.append(True)))
    counter = Counter()
    counter.start()
    threading.Timer(0.05, go.set).start()
    cpu.sync()
    counter.stop = True
    counter.join()
    assert done == [True]
    assert counter.count > 1000, f"the other thread counted {counter.count} while sync waited"


def test_bulk_resolve_releases_the_gil(cpu):
    import lapse

    ds = lapse.Durations()
    with cpu.window(into=ds, flush=True):
        cpu.submit(0, lambda: time.sleep(0.2))
    counter = Counter()
    counter.start()
    r = cpu.resolve(ds, timeout=30)
    counter.stop = True
    counter.join()
    assert r.final and r.ready.all()
    assert counter.count > 1000
