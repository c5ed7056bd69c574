#!/usr/bin/env python3
"""Summarises a job's memory timeline (<output>.timeline.jsonl, supervisor/workers/timeline.h).

For each worker generation: its chunks, frames, and host RSS and GPU memory (allocated,
reserved, the driver's per-process figure) at its first and its last chunk and at its peak;
then the job's peaks over all workers and the events that ended generations. Run by
the `long` case (scripts/gpu/run-case.py long) to show whether memory stays flat from first
chunk to last.

Usage: timeline-summary.py TIMELINE.jsonl
"""
import json
import sys
from collections import OrderedDict

FIELDS = ("rss_mb", "gpu_allocated_mb", "gpu_reserved_mb", "gpu_process_mb")


def main(path):
    gens = OrderedDict()
    ends = {}
    last_t = 0.0
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            e = json.loads(line)
            last_t = max(last_t, e.get("t", 0.0))
            key = (e.get("worker"), e.get("gen"))
            if e.get("event") == "chunk":
                gens.setdefault(key, []).append(e)
            elif e.get("event") in ("recycle", "stop", "crash", "kill"):
                ends.setdefault(key, []).append(e["event"])
    if not gens:
        print("timeline: no chunk events in", path)
        return 1
    print("%-10s %6s %7s  %-28s %-28s %-28s  %s" % (
        "worker/gen", "chunks", "frames", "first chunk rss/alloc/resv/proc",
        "last chunk", "peak", "ended by"))

    def fmt(vals):
        return "/".join("%.0f" % v for v in vals)

    peak_all = [0.0] * len(FIELDS)
    for (w, g), chunks in gens.items():
        first = [chunks[0].get(k, 0) for k in FIELDS]
        last = [chunks[-1].get(k, 0) for k in FIELDS]
        peak = [max(c.get(k, 0) for c in chunks) for k in FIELDS]
        peak_all = [max(a, b) for a, b in zip(peak_all, peak)]
        print("%-10s %6d %7d  %-28s %-28s %-28s  %s" % (
            "%s/%s" % (w, g), len(chunks), chunks[-1].get("frames", 0), fmt(first), fmt(last),
            fmt(peak), ",".join(ends.get((w, g), [])) or "-"))
    print("generations %d, job peak (MB) rss %.0f, gpu allocated %.0f, reserved %.0f, "
          "process %.0f; timeline ends at %.1f s" % (len(gens), *peak_all, last_t))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
