#!/usr/bin/env python3
"""A real Prometheus server scrapes `lapse run --metrics` on loopback.

Starts Debian's `prometheus` on 127.0.0.1 (a free port, a scrape interval
of one second, a temporary storage folder), aimed at a `lapse run
--seconds N --metrics 127.0.0.1:PORT --capture FILE` soak. After the run,
asks Prometheus's HTTP API for histogram_quantile(0.5, ...) of the busiest
device-timed window name and checks it against the capture's own median
(`lapse report --json`): they must agree within the width of the bucket
the capture's median falls in. The last scraped count must be most of the
capture's (the last second of the run may fall after the last scrape).

The run has ended when Prometheus is asked, and a target that stopped
answering gets staleness markers: the query reads the last sample before
them (last_over_time), as an alert over a finished job would.

Usage: prometheus_scrape.py LAPSE PROMETHEUS WORKDIR
Exit codes: 0 passed, 1 failed, 77 skipped (no prometheus binary here).
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

# The sink's buckets (core/src/metrics/window_metrics.cpp): 1-2-5, 1 us to 100 s.
BUCKETS = [d * s for d in (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0) for s in (1, 2, 5)] + [100.0]
SECONDS = 8


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_for(url, seconds):
    deadline = time.time() + seconds
    while True:
        try:
            return get(url, 2)
        except OSError:
            if time.time() > deadline:
                raise RuntimeError(f"{url} did not answer within {seconds} s")
            time.sleep(0.2)


def query(prom_port, expr):
    answer = json.loads(get(f"http://127.0.0.1:{prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
    if answer.get("status") != "success":
        raise RuntimeError(f"query {expr!r}: {answer}")
    return answer["data"]["result"]


def bucket_width(value):
    lower = 0.0
    for upper in BUCKETS:
        if value <= upper:
            return upper - lower
        lower = upper
    return float("inf")


def main():
    lapse, prometheus, work = sys.argv[1], sys.argv[2], sys.argv[3]
    prometheus = shutil.which(prometheus)
    if not prometheus:
        print(f"SKIP: no prometheus binary (scripts/setup.sh installs Debian's prometheus with LAPSE_SETUP_TESTS=1)")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    metrics_port, prom_port = free_port(), free_port()
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: lapse
    static_configs:
      - targets: ['127.0.0.1:{metrics_port}']
""")
    capture = os.path.join(work, "run.lapse-capture")
    prom_log = open(os.path.join(work, "prometheus.log"), "w")
    prom = subprocess.Popen(
        [prometheus, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{prom_port}",
         f"--storage.tsdb.path={os.path.join(work, 'tsdb')}", "--log.level=warn"],
        stdout=prom_log, stderr=subprocess.STDOUT)
    run = None
    try:
        wait_for(f"http://127.0.0.1:{prom_port}/-/ready", 90)
        run = subprocess.Popen([lapse, "run", "--seconds", str(SECONDS), "--metrics", f"127.0.0.1:{metrics_port}",
                                "--capture", capture], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        wait_for(f"http://127.0.0.1:{metrics_port}/metrics", 30)
        out, _ = run.communicate(timeout=SECONDS + 120)
        if run.returncode != 0:
            print(out.decode(errors="replace"))
            print(f"FAIL: lapse run exited {run.returncode}")
            return 1
        report = json.loads(subprocess.run([lapse, "report", capture, "--json"], check=True,
                                           capture_output=True).stdout)
        rows = [w for w in report["windows"] if w["method"] == "device" and w["count"] > 0 and w["median_ns"]]
        if not rows:
            print(f"FAIL: the capture has no device-timed window: {report['windows']}")
            return 1
        row = max(rows, key=lambda w: w["count"])
        name, median_s = row["name"], row["median_ns"] / 1e9
        selector = f'lapse_window_duration_seconds_bucket{{window="{name}",method="device",job="lapse"}}'
        expr = f"histogram_quantile(0.5, sum by (le) (last_over_time({selector}[5m])))"
        count_expr = (f'sum(last_over_time(lapse_window_duration_seconds_count'
                      f'{{window="{name}",method="device",job="lapse"}}[5m]))')
        # The last scrapes may still be on their way into the TSDB.
        deadline = time.time() + 30
        result = []
        while time.time() < deadline and not result:
            result = query(prom_port, expr)
            if not result:
                time.sleep(1)
        if not result:
            print(f"FAIL: Prometheus has no series for window {name!r} ({expr})")
            return 1
        # The counters start at zero with their label set (dropped ones are
        # per name and appear with the first drop).
        for family in ("lapse_windows_failed_total", "lapse_windows_not_measured_total",
                       "lapse_windows_work_queued_total"):
            if not query(prom_port, f'count(last_over_time({family}{{window="{name}",job="lapse"}}[5m]))'):
                print(f"FAIL: Prometheus has no {family} series for window {name!r}")
                return 1
        scraped = float(result[0]["value"][1])
        scraped_count = float(query(prom_port, count_expr)[0]["value"][1])
        width = bucket_width(median_s)
        print(f"window {name!r}: capture median {median_s * 1e3:.4f} ms of {row['count']} windows; "
              f"Prometheus histogram_quantile(0.5) {scraped * 1e3:.4f} ms of {scraped_count:.0f} scraped; "
              f"bucket width {width * 1e3:.4f} ms")
        if not abs(scraped - median_s) <= width:
            print("FAIL: the scraped median is further from the capture's than the bucket's width")
            return 1
        if not (0.5 * row["count"] <= scraped_count <= row["count"]):
            print("FAIL: the scraped count is not most of the capture's windows of that name")
            return 1
        print("PASS")
        return 0
    finally:
        if run and run.poll() is None:
            run.kill()
            run.wait()
        prom.terminate()
        try:
            prom.wait(timeout=20)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait()
        prom_log.close()


if __name__ == "__main__":
    sys.exit(main())
