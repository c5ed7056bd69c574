#!/usr/bin/env python3
"""How long a CUDA process takes to exit once asked, as a supervisor waiting for its worker sees it.

usage: exit-cost.py [ROUNDS]   (default 3)

Each round starts a child that loads torch, takes about 3 GB on the GPU, runs a conv2d and a
matmul in fp16 (cuDNN and cuBLAS loaded, as a framemill worker's are), says it is ready, then on
a line from its parent either returns from main (every destructor and torch's teardown, as the
worker returns from RunWorker) or calls os._exit(0) (the kernel's cleanup only). The parent times
from that line to waitpid's return. Run on the GPU machine.
"""
import os
import subprocess
import sys
import time

CHILD = r"""
import os, sys, torch
x = torch.empty(3 * 1024**3, dtype=torch.uint8, device="cuda")
a = torch.rand(4, 64, 540, 960, device="cuda", dtype=torch.float16)
w = torch.rand(64, 64, 3, 3, device="cuda", dtype=torch.float16)
torch.nn.functional.conv2d(a, w, padding=1).sum().item()
(torch.rand(256, 256, device="cuda", dtype=torch.float16) @ torch.rand(256, 256, device="cuda", dtype=torch.float16)).sum().item()
print("ready", flush=True)
sys.stdin.readline()
if sys.argv[1] == "_exit":
    sys.stdout.flush()
    os._exit(0)
"""


def one(mode):
    p = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    t0 = time.perf_counter()
    p.stdin.write("stop\n")
    p.stdin.flush()
    p.wait()
    return time.perf_counter() - t0


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for mode in ("return", "_exit") * rounds:
        print(f"{mode:7} exit took {one(mode) * 1000:7.1f} ms", flush=True)


if __name__ == "__main__":
    main()
