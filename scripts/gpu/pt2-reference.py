#!/usr/bin/env python3
"""`restore` in its candidate fastest forms, side by side in one process: frozen TorchScript (what
the worker runs for a .pt), torch.compile of the same network in eager PyTorch, and .pt2 packages
(scripts/export-pt2.py) loaded as the worker loads them. 1080p fp16, frames already on the device
in channels-last (the worker's layout), each form at the batch sizes given.

usage: pt2-reference.py RESTORE.pt [PACKAGE.pt2 ...] [--batches 4,8] [--size 1920x1080]

A package made for one shape (its card beside it: fixed_batch) runs at its own batch only. Prints
fps per form, best first, with cuDNN autotuning off (the worker's default) and on.
Run where torch is installed (the GPU machine): the pt2fixed case (scripts/gpu/run-case.py) runs it.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_timing import fps  # noqa: E402
from restore_module import Restore  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("packages", nargs="*")
    p.add_argument("--batches", default="4,8")
    p.add_argument("--size", default="1920x1080")
    a = p.parse_args()
    w, h = (int(v) for v in a.size.split("x"))
    batches = [int(b) for b in a.batches.split(",")]
    dev = torch.device("cuda")
    rows = []

    def frames(batch):
        return torch.rand(batch, 3, h, w, device=dev, dtype=torch.float16).contiguous(
            memory_format=torch.channels_last)

    script = torch.jit.load(a.model, map_location=dev).eval().half()
    frozen = torch.jit.optimize_for_inference(torch.jit.freeze(script))
    eager = Restore(a.model).to(dev).half().eval()
    compiled = torch.compile(eager)
    for bench in (False, True):
        torch.backends.cudnn.benchmark = bench
        tag = f"cudnn autotune {'on' if bench else 'off'}"
        for b in batches:
            x = frames(b)
            rows.append((fps(frozen, x, reps=8), f"TorchScript frozen, batch {b}, {tag}"))
            t0 = time.perf_counter()
            with torch.inference_mode():
                compiled(x)
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
            rows.append((fps(compiled, x, reps=8), f"torch.compile, batch {b}, {tag} (first call {first:.1f} s)"))
            del x
        for path in a.packages:
            card = {}
            if os.path.exists(path + ".json"):
                with open(path + ".json") as f:
                    card = json.load(f)
            runner = torch._inductor.aoti_load_package(path)
            for b in [card["fixed_batch"]] if "fixed_batch" in card else batches:
                x = frames(b)
                rows.append((fps(lambda t: runner(t), x, reps=8),
                             f"{os.path.basename(path)}, batch {b}, {tag}"))
                del x
    for f, name in sorted(rows, reverse=True):
        print(f"{f:8.2f} fps  {name}")


if __name__ == "__main__":
    main()
