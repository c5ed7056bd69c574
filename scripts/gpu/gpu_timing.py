"""Frames per second of a model call on the GPU, shared by the reference scripts
(model-reference.py, pt2-reference.py): three warm-up calls, then `reps` timed ones between
device synchronisations; the frames are the batch's (x.shape[0])."""
import time

import torch


def fps(fn, x, reps=6):
    with torch.inference_mode():
        for _ in range(3):
            fn(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn(x)
        torch.cuda.synchronize()
        return x.shape[0] * reps / (time.perf_counter() - t0)


def sustained_fps(fn, x, seconds=5.0):
    """fps over about `seconds` of back-to-back calls: for ratios near 1, where six calls of a
    few tens of ms each move by a few per cent from run to run."""
    with torch.inference_mode():
        for _ in range(3):
            fn(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(x)
        torch.cuda.synchronize()
        one = max(time.perf_counter() - t0, 1e-4)
    return fps(fn, x, reps=max(6, int(seconds / one)))
