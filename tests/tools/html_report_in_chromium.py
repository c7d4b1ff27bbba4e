#!/usr/bin/env python3
"""lapse report --html in a real headless Chromium: the page loads with no
JavaScript error, draws every window of a known session on the timeline,
shows its histograms, table and diff view, needs no network, and stays
responsive on 1,000,000 windows (aggregated when zoomed out).

Usage: html_report_in_chromium.py LAPSE MAKE_VIEW_SESSIONS CHROMIUM
"""
import os
import re
import subprocess
import sys
import tempfile
import time


def dump_dom(chromium, page, profile, fragment=""):
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + profile,
           "--virtual-time-budget=60000", "--dump-dom", "file://" + page + fragment]
    started = time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=300, check=True)
    return out.stdout.decode("utf-8", "replace"), time.monotonic() - started


def ready_attrs(dom):
    m = re.search(r'<div id="lapse-ready"([^>]*)>', dom)
    if not m:
        raise AssertionError("no #lapse-ready element in the DOM")
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))


def main():
    lapse, maker, chromium = sys.argv[1:4]
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([maker, tmp], check=True)
        small = os.path.join(tmp, "small.html")
        subprocess.run([lapse, "report", os.path.join(tmp, "small.lapse"), "--html", small,
                        "--base", os.path.join(tmp, "base.lapse")], check=True)
        html = open(small, encoding="utf-8").read()
        check(not re.search(r'<(script|link|img)[^>]+(src|href)=', html), "the page loads nothing from outside")
        dom, seconds = dump_dom(chromium, small, os.path.join(tmp, "profile-small"))
        errors = re.findall(r'<pre class="lapse-error">([^<]*)', dom)
        check(not errors, "no JavaScript error (window.onerror wrote nothing): %s" % errors)
        attrs = ready_attrs(dom)
        check(attrs.get("data-status") == "done", "the script ran to its end: %s" % attrs)
        check(attrs.get("data-windows") == "19", "19 measured windows in the data")
        check(attrs.get("data-rects") == "19", "the timeline drew all 19 windows at full zoom-out")
        check(len(re.findall(r'<rect[^>]*class="window"', dom)) == 19, "19 <rect class=window> in the DOM")
        tracks = re.findall(r'data-track="([^"]*)"', dom)
        check(sorted(tracks) == sorted(["thread 7", "stream 0", "stream 1 (device clock, not aligned)"]),
              "a track per thread and stream: %s" % tracks)
        # frame and step (system), kernel <b> and copy (device)
        check(attrs.get("data-histograms") == "4", "a histogram per window name and method")
        check(len(re.findall(r"<canvas", dom)) == 4, "four histogram canvases drawn by Chart.js")
        check("kernel &lt;b&gt;" in dom and "<b>" not in dom.split("<h2>Statistics")[1].split("</table>")[0],
              "window names are escaped in the table")
        check('class="diff"' in dom and "verdict-slower" in dom, "the diff view shows the slower kernel")

        big = os.path.join(tmp, "big.html")
        started = time.monotonic()
        subprocess.run([lapse, "report", os.path.join(tmp, "big.lapse"), "--html", big], check=True)
        print("report --html of 1,000,000 windows: %.1f s, %.1f MB" % (time.monotonic() - started,
                                                                      os.path.getsize(big) / 1e6))
        dom, seconds = dump_dom(chromium, big, os.path.join(tmp, "profile-big"), "#zoom-test")
        attrs = ready_attrs(dom)
        print("chromium on 1,000,000 windows: %.1f s in all, first render %s ms" % (seconds, attrs.get("data-render-ms")))
        check(attrs.get("data-status") == "done", "the 1M-window page finished: %s" % attrs)
        check(attrs.get("data-windows") == "1000000", "1,000,000 windows in the data")
        check(int(attrs.get("data-initial-rects", "-1")) == 0 and int(attrs.get("data-initial-aggregated", "0")) > 0,
              "zoomed out, the dense tracks are aggregated, not drawn window by window")
        check(len(re.findall(r"<rect", dom)) < 20000, "the DOM stays small (%d rects)" % len(re.findall(r"<rect", dom)))
        check(int(attrs.get("data-render-ms", "1e9")) < 20000, "script done in under 20 s on a loaded machine")
        print("zoomed into a thousandth: %s windows drawn one by one in %s ms" %
              (attrs.get("data-zoomed-rects"), attrs.get("data-zoom-ms")))
        check(int(attrs.get("data-zoomed-rects", "0")) > 0, "zoomed in, single windows are drawn")
        check(int(attrs.get("data-zoom-ms", "1e9")) < 2000, "a redraw takes under 2 s on a loaded machine")
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
