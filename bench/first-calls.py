#!/usr/bin/env python3
"""Where a worker's first chunk goes: the first calls of a TorchScript model, one by one.

usage: bench/first-calls.py MODEL.pt VARIANT [BATCH WIDTH HEIGHT]   (default 4 1920 1080)

Loads the file as framemill's worker does on CUDA (fp16, frozen, optimize_for_inference,
channels-last input, inference mode) and prints the wall time of each of the first 8 calls at one
shape, the device synchronised after each. VARIANT changes one thing, to tell the warm-up costs
apart (run each in a fresh process: the JIT's caches live in the process):
  default       as the worker runs it
  nofuser       the TensorExpr fuser off (no kernels generated and compiled at run time)
  simple        the JIT's simple executor (no profiling runs, no specialisation)
  benchmark     cuDNN autotuning on (torch.backends.cudnn.benchmark)
  notfreeze     loaded as it is, not frozen
Run where torch is installed (the GPU machine).
"""
import sys
import time

import torch


def main():
    path, variant = sys.argv[1], sys.argv[2]
    batch, width, height = (int(v) for v in (sys.argv[3:6] if len(sys.argv) > 3 else (4, 1920, 1080)))
    if variant == "nofuser":
        torch._C._jit_set_texpr_fuser_enabled(False)
    elif variant == "simple":
        torch._C._get_graph_executor_optimize(False)
    elif variant == "benchmark":
        torch.backends.cudnn.benchmark = True
    t0 = time.perf_counter()
    m = torch.jit.load(path, map_location="cuda").eval().half()
    if variant != "notfreeze":
        m = torch.jit.optimize_for_inference(torch.jit.freeze(m))
    torch.cuda.synchronize()
    load_ms = (time.perf_counter() - t0) * 1000
    x = torch.rand(batch, 3, height, width, device="cuda").half().contiguous(
        memory_format=torch.channels_last)
    times = []
    with torch.inference_mode():
        for _ in range(8):
            t = time.perf_counter()
            m(x)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t) * 1000)
    print(f"{variant:10s} load {load_ms:7.0f} ms; calls (ms): " + " ".join(f"{v:.0f}" for v in times))


if __name__ == "__main__":
    main()
