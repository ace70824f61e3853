"""CPU time of the page's main-thread tasks per phase, from a Chromium trace.

A long task (``PerformanceObserver``) is wall time: on a machine shared with other work the
OS stretches it whenever it runs something else (on 2 cores at a load of 10-15, a task of
55 ms of CPU was observed as a 390 ms long task). The trace's thread time (``tdur``) of each
top-level task on the renderer's main thread is what the page itself costs, whatever the
load; ``bench/longtasks.py`` prints both. Phases are marked in the trace with
``console.timeStamp`` when the harness closes one, as ``Tab.phase`` closes it for long tasks.
"""

from __future__ import annotations

import json

CATEGORIES = "toplevel,devtools.timeline"
MARK = "phase:"


class Trace:
    """A Chromium trace of one page, started when the page is ready, read when a path ends."""

    def __init__(self, page) -> None:
        self.page = page
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Tracing.start", {"categories": CATEGORIES, "transferMode": "ReturnAsStream"})

    def mark(self, phase: str) -> None:
        self.page.evaluate("name => console.timeStamp(name)", MARK + phase)

    def stop(self) -> list[dict]:
        done: dict = {}
        self.cdp.on("Tracing.tracingComplete", lambda event: done.update(event))
        self.cdp.send("Tracing.end")
        while not done:
            self.page.wait_for_timeout(100)
        chunks = []
        while True:
            read = self.cdp.send("IO.read", {"handle": done["stream"], "size": 1 << 22})
            chunks.append(read["data"])
            if read.get("eof"):
                break
        self.cdp.send("IO.close", {"handle": done["stream"]})
        events = json.loads("".join(chunks))
        return events["traceEvents"] if isinstance(events, dict) else events


def longest_cpu(events: list[dict]) -> dict[str, float]:
    """For each phase, the most CPU (ms) one main-thread task of the page used in it."""
    stamps = [(e, str(e.get("args", {}).get("data", {}).get("message", ""))) for e in events
              if e.get("name") == "TimeStamp"]
    marks = sorted((e["ts"], e["pid"], text[len(MARK):]) for e, text in stamps if text.startswith(MARK))
    if not marks:
        return {}
    pid = marks[0][1]
    mains = {e["tid"] for e in events if e.get("name") == "thread_name" and e["pid"] == pid
             and e["args"]["name"] == "CrRendererMain"}
    tasks = sorted((e["ts"], e.get("tdur", 0) / 1000) for e in events
                   if e.get("ph") == "X" and e["name"] == "ThreadControllerImpl::RunTask"
                   and e["pid"] == pid and e["tid"] in mains)
    longest: dict[str, float] = {}
    start = float("-inf")
    for at, _, phase in marks:
        inside = [cpu for ts, cpu in tasks if start <= ts < at]
        longest[phase] = max([longest.get(phase, 0.0), *inside])
        start = at
    return longest
