#!/usr/bin/env python3
"""The model alone in PyTorch, as the reference framemill's worker is measured against.

usage: model-reference.py MODEL.pt [WIDTH HEIGHT [BATCH]]   (default 1920 1080 8)
       model-reference.py --engine ENGINE.pt2 MODEL.pt WIDTH HEIGHT BATCH [--no-packages]
                          [--engine-only] [--busy-cpus N]

Times, on CUDA in fp16 with cuDNN autotuning, random frames already on the device:
  script    the TorchScript file as framemill's worker runs it (torch.jit.load), batch 1-16,
            channels-last and NCHW
  eager     for framemill's `restore` example model only: the same network written as eager
            PyTorch from the file's parameters (batch 8, channels-last)
  compiled  that eager network under torch.compile (what a .pt2 package would hold), at BATCH,
            in the default mode and in max-autotune (the fastest form a worker is held against)
and prints frames per second for each, the best first. With --engine (a compiled engine from
framemill's cache, made for WIDTH x HEIGHT at BATCH) only the compiled rows, each sustained for
5 s: the engine alone, torch.compile default and max-autotune, and the same network packaged by
AOTInductor with and without max-autotune (not with --no-packages: two builds fewer), each
with its ratio to the fastest; so that a worker's gap splits into the engine's own and the
worker's around it. --engine-only: the engine's rows alone. --busy-cpus N: the engine again
beside N processes spinning on the CPU, at its niceness and 10 nicer (what a job's encoders
filling the cores cost its kernel launches). Any TorchScript file (an imported model's too)
reaches torch.compile through torch's TorchScript converter, as export-pt2.py's. Run where torch
is installed (the GPU machine); the `restore` case (scripts/gpu/run-case.py restore) runs it beside framemill-bench.
"""
import importlib.util
import os
import subprocess
import sys
import time
import types

import torch
import torch.nn.functional as F

from gpu_timing import fps, sustained_fps


def restore_eager(params):
    blocks = sum(1 for n in params if n.endswith("_a_w"))

    def forward(x):
        y = F.conv2d(x, params["head_w"], params["head_b"], padding=1)
        for i in range(blocks):
            r = F.relu(F.conv2d(y, params[f"block{i}_a_w"], params[f"block{i}_a_b"], padding=1))
            y = y + 0.1 * F.conv2d(r, params[f"block{i}_b_w"], params[f"block{i}_b_b"], padding=1)
        y = F.conv2d(y, params["tail_w"], params["tail_b"], padding=1)
        return torch.clamp(x + 0.05 * torch.tanh(y), 0.0, 1.0)

    return forward


def channels_last_input(batch, h, w):
    return torch.rand(batch, 3, h, w, device="cuda", dtype=torch.float16).contiguous(
        memory_format=torch.channels_last)


def timed_build(make):
    t0 = time.monotonic()
    made = make()
    torch.cuda.synchronize()
    return made, time.monotonic() - t0


def eager_form(script, params, batch, h, w):
    """The network as eager PyTorch, for torch.compile: framemill's `restore` written out, any
    other TorchScript file through torch's converter (as export-pt2.py converts it)."""
    if "block0_a_w" in params:
        return restore_eager(params)
    try:
        from torch._export.converter import TS2EPConverter
        example = torch.rand(batch, 3, h, w, device="cuda", dtype=torch.float16)
        return TS2EPConverter(script, (example,)).convert().module()
    except Exception as e:  # as export-pt2.py does then: the interpreter traced by torch.export
        print(f"torch's converter failed ({type(e).__name__}: {str(e).splitlines()[0]}): the "
              "network as export-pt2.py exports it, traced through the interpreter")
    try:
        spec = importlib.util.spec_from_file_location(
            "export_pt2", os.path.join(os.path.dirname(__file__), "..", "export-pt2.py"))
        export_pt2 = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(export_pt2)
        shape = types.SimpleNamespace(shape=(w, h), batch=batch)
        program, _, _ = export_pt2.export_any(None, script, shape, torch.device("cuda"),
                                              torch.float16)
        return program.module()
    except (Exception, SystemExit) as e:  # report, do not hide
        print(f"no eager form ({type(e).__name__}: {str(e).splitlines()[0]}): the engine's row only")
        return None


def busy_rows(run, x, busy):
    """The engine's rate with `busy` processes spinning on the CPU beside it, at the same
    niceness and 10 nicer: whether CPU-bound neighbours (a job's encoders) slow its launches."""
    rows = []
    for nicer in (0, 10):
        spin = "import os, sys; os.nice(int(sys.argv[1]))\nwhile True: pass"
        spinners = [subprocess.Popen([sys.executable, "-c", spin, str(nicer)])
                    for _ in range(busy)]
        try:
            time.sleep(1)
            rows.append((sustained_fps(run, x), f"the engine, {busy} processes spinning beside "
                         f"it{' 10 nicer' if nicer else ''}"))
        finally:
            for p in spinners:
                p.kill()
                p.wait()
    return rows


def engine_rows(engine, path, w, h, batch, packages=True, others=True, busy=0):
    """The compiled forms alone, sustained: the engine framemill built, and the fastest forms
    (with `packages`, AOTInductor's too, two builds more; without `others`, the engine alone),
    and with `busy`, the engine beside that many processes spinning on the CPU."""
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    script = torch.jit.load(path, map_location=dev).eval().half()
    params = {n: p.detach() for n, p in script.named_parameters()}
    x = channels_last_input(batch, h, w)
    rows = []
    runner = torch._inductor.aoti_load_package(engine)
    rows.append((sustained_fps(lambda t: runner(t), x), "the engine (framemill model compile)"))
    if busy:
        rows += busy_rows(lambda t: runner(t), x, busy)
    eager = eager_form(script, params, batch, h, w) if others else None
    if eager is not None:
        for mode in ("default", "max-autotune"):
            compiled, built = timed_build(lambda: torch.compile(eager, mode=mode))
            compiled(x)
            rows.append((sustained_fps(compiled, x), f"torch.compile {mode} (first call "
                         f"{built:.0f} s)"))
        class Net(torch.nn.Module):
            def forward(self, t):
                return eager(t)
        with torch.inference_mode():
            program = torch.export.export(Net().eval(), (x,), strict=False)
        for autotune in (False, True) if packages else ():
            pkg = f"/tmp/model-reference-{int(autotune)}.pt2"
            _, built = timed_build(lambda: torch._inductor.aoti_compile_and_package(
                program, package_path=pkg, inductor_configs={"max_autotune": autotune}))
            run = torch._inductor.aoti_load_package(pkg)
            rows.append((sustained_fps(lambda t: run(t), x), "AOTInductor package, max_autotune "
                         f"{autotune} (built in {built:.0f} s)"))
    best = max(f for f, _ in rows)
    for f, name in sorted(rows, reverse=True):
        print(f"{f:8.2f} fps  {f / best:.3f}  {name}  (batch {batch}, {w}x{h})")


def main():
    if sys.argv[1] == "--engine":
        flags = sys.argv[7:]
        busy = int(flags[flags.index("--busy-cpus") + 1]) if "--busy-cpus" in flags else 0
        engine_rows(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                    int(sys.argv[6]), packages="--no-packages" not in flags,
                    others="--engine-only" not in flags, busy=busy)
        return
    path = sys.argv[1]
    w, h = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (1920, 1080)
    batch_c = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    script = torch.jit.load(path, map_location=dev).eval().half()
    rows = []
    for batch in (1, 2, 4, 8, 16):
        for cl in (True, False):
            x = torch.rand(batch, 3, h, w, device=dev, dtype=torch.float16)
            if cl:
                x = x.contiguous(memory_format=torch.channels_last)
            rows.append((fps(script, x), f"script batch {batch} {'channels-last' if cl else 'NCHW'}"))
            del x
            torch.cuda.empty_cache()
    # What cuDNN's autotuning costs at a new shape, and what it buys: the first call at batch 8
    # with it off and on (in fresh shapes), then the steady rate with it off.
    for bench in (False, True):
        torch.backends.cudnn.benchmark = bench
        hh = h + (2 if bench else 4)  # a shape neither run has seen
        x = torch.rand(8, 3, hh, w, device=dev, dtype=torch.float16).contiguous(
            memory_format=torch.channels_last)
        with torch.inference_mode():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            script(x)
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
        print(f"first call at a new shape, cudnn.benchmark={bench}: {first:.3f} s")
        if not bench:
            rows.append((fps(script, x), "script batch 8 channels-last, cudnn.benchmark off"))
        del x
    torch.backends.cudnn.benchmark = True
    x = torch.rand(8, 3, h, w, device=dev, dtype=torch.float16).contiguous(
        memory_format=torch.channels_last)
    try:
        frozen = torch.jit.optimize_for_inference(torch.jit.freeze(script))
        rows.append((fps(frozen, x), "script frozen + optimize_for_inference batch 8 channels-last"))
    except Exception as e:
        print(f"freeze failed: {type(e).__name__}: {str(e).splitlines()[0]}")
    torch._C._jit_set_profiling_executor(False)
    fresh = torch.jit.load(path, map_location=dev).eval().half()
    rows.append((fps(fresh, x), "script, profiling executor off, batch 8 channels-last"))
    torch._C._jit_set_profiling_executor(True)
    del x
    params = {n: p.detach() for n, p in script.named_parameters()}
    if "block0_a_w" in params:
        eager = restore_eager(params)
        x = torch.rand(8, 3, h, w, device=dev, dtype=torch.float16).contiguous(
            memory_format=torch.channels_last)
        rows.append((fps(eager, x), "eager batch 8 channels-last"))
        x = torch.rand(batch_c, 3, h, w, device=dev, dtype=torch.float16).contiguous(
            memory_format=torch.channels_last)
        for mode in ("default", "max-autotune"):
            try:
                t0 = time.monotonic()
                compiled = torch.compile(eager, mode=mode)
                compiled(x)
                torch.cuda.synchronize()
                built = time.monotonic() - t0
                rows.append((fps(compiled, x), f"compiled (torch.compile {mode}, built in "
                             f"{built:.0f} s) batch {batch_c} channels-last"))
            except Exception as e:  # report, do not hide
                print(f"torch.compile {mode} failed: {type(e).__name__}: "
                      f"{str(e).splitlines()[0]}")
    for f, name in sorted(rows, reverse=True):
        print(f"{f:8.2f} fps  {name}")


if __name__ == "__main__":
    main()
