#!/usr/bin/env python3
"""Packages a frame model as a .pt2 (torch.export + AOTInductor) that framemill's worker loads
beside TorchScript, and writes its model card (OUT.json, common/model_card.h) beside it.

usage:
  export-pt2.py --torchscript MODEL.pt OUT.pt2 [options]
  export-pt2.py --module package.module:factory OUT.pt2 [options]

--module names a Python callable that returns a torch.nn.Module (with its trained weights loaded)
importable from the current directory or PYTHONPATH. The model must keep framemill's contract:
float [N,3,H,W] RGB in [0,1] in, [N,3,H*s,W*s] out. Prefer it to --torchscript: with torch 2.11
a TorchScript file does not export with dynamic sizes (the converter guards its example's sizes,
the interpreter fixes them), and the script stops saying so.

options:
  --device cuda|cpu       the device the package is compiled for (default cuda); a package runs
                          only there
  --precision fp32|fp16   weights and activations (default fp16 on cuda, fp32 on cpu); a job's
                          precision must match
  --min-size N            smallest frame width/height the package takes (default 32)
  --max-size N            largest (default 4096)
  --max-batch N           largest batch (default 16)
  --size-multiple N       width and height must be multiples of N (default 1; e.g. 4 for a
                          network that downsamples twice)
  --shape WxH             a package for frames of exactly W x H (upright, as the model sees them)
  --batch N               ... and batches of exactly N (default 8, the job's default batch; a
                          job's batch must then be N). With --shape, Inductor specialises its
                          kernels to the one shape (static sizes), which can be faster than a
                          package with dynamic sizes; the card records it (fixed_width,
                          fixed_height, fixed_batch) and framemill refuses other sizes, other
                          batches, tiles and face mode with that package
  --max-autotune          Inductor times candidate kernels for each convolution and matrix
                          product at build time and keeps the fastest (as torch.compile's
                          max-autotune): a slower build, a faster package (framemill's engines)
  --name NAME             the card's name (default: OUT's stem)
  --check-here            check the package in this process, not a fresh one (framemill's
                          confined builder, where a child process cannot start CUDA)
  --check-frames FILE     with --shape: check on these frames instead of a random batch (raw
                          rgb24, --batch frames of W x H, as `ffmpeg -f rawvideo -pix_fmt rgb24`
                          writes them; framemill's builder takes them from the job's video)

The package holds code compiled for this machine's GPU architecture and this torch version: build
it where it will run (or on the same GPU and torch). After packaging, the script loads the package
in a fresh Python process and compares its output with the source model on a random batch (or
the frames of --check-frames); it fails when they differ by more than 1e-2 (fp16) or 1e-4 (fp32).
Run where torch (2.6 or later) is installed, for example the GPU machine.
"""
import argparse
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile


def links_shared_runtime(compiler):
    """Whether `compiler` links a shared object against the shared libstdc++ (it NEEDs
    libstdc++.so.6), tried on a one-line library."""
    tmp = tempfile.mkdtemp(prefix="export-pt2-cc-")
    src, lib = os.path.join(tmp, "t.cpp"), os.path.join(tmp, "t.so")
    with open(src, "w") as f:
        f.write("#include <string>\nstd::string f(const char* s) { return s; }\n")
    try:
        subprocess.run([compiler, "-shared", "-fPIC", src, "-o", lib], check=True,
                       capture_output=True)
        out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return "libstdc++.so" in out


def choose_compiler():
    """Sets CXX to a C++ compiler that links the package against the shared C++ runtime.

    AOTInductor compiles the package's shared object with $CXX (else g++). A toolchain that links
    libstdc++ statically by default (seen: a GCC in /opt/gcc named by CXX on a GPU image) puts a
    second C++ runtime inside the package; every process that loads it (Python's torch,
    framemill's worker) already has the shared libstdc++ through LibTorch, so it then holds two,
    with two sets of locale tables, and the package's std::regex (which parses the device string
    when the package loads) takes a facet from the wrong one: SIGSEGV in
    regex_traits::transform_primary. So $CXX is kept only if it links the shared runtime; else
    the first g++/c++ on PATH that does is used, saying so. Must run before torch is imported
    (Inductor reads CXX then).
    """
    tried = []
    for compiler in [os.environ.get("CXX")] + which_all("g++", "c++"):
        if not compiler or compiler in tried:
            continue
        tried.append(compiler)
        if links_shared_runtime(compiler):
            if os.environ.get("CXX") and compiler != os.environ["CXX"]:
                print(f"export-pt2: CXX={os.environ['CXX']} links a static C++ runtime into "
                      f"shared objects; packaging with {compiler} instead")
            os.environ["CXX"] = compiler
            return
    sys.exit("export-pt2: no C++ compiler here links against the shared libstdc++ (tried "
             + ", ".join(tried) + "); a package with its own static C++ runtime crashes when "
             "loaded beside LibTorch")


def which_all(*names):
    """Every executable called one of `names` on PATH, in PATH order."""
    found = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        for n in names:
            p = os.path.join(d, n)
            if os.access(p, os.X_OK) and os.path.realpath(p) not in map(os.path.realpath, found):
                found.append(p)
    return found



choose_compiler()
import torch  # noqa: E402 (after the compiler is chosen)


class Wrapped(torch.nn.Module):
    """A TorchScript module seen by torch.export as a plain module (non-strict tracing records the
    aten operations the TorchScript interpreter dispatches).

    torch.export takes the module's weights for its parameters and insists that each be an
    nn.Parameter, but a TorchScript file's come back from LibTorch as plain tensors (every file
    framemill's importers write, and any saved from C++). So each is set again as an nn.Parameter
    holding the same storage; with `hidden` the script is kept out of the module tree instead, and
    its weights become constants of the program."""

    def __init__(self, inner, hidden=False):
        super().__init__()
        if hidden:
            object.__setattr__(self, "script", inner)  # not a submodule: no parameters to check
            return
        for _, owner in inner.named_modules():
            for name, value in list(owner.named_parameters(recurse=False)):
                if not isinstance(value, torch.nn.Parameter):
                    setattr(owner, name, torch.nn.Parameter(value.detach(), requires_grad=False))
        self.script = inner

    def forward(self, x):
        return self.script(x)


def load_source(args, device, dtype):
    """The module to export (None where torch's converter does not take a TorchScript file), its
    source for the card, and the TorchScript module (None for --module)."""
    if args.torchscript:
        script = torch.jit.load(args.torchscript, map_location=device).to(dtype).eval()
        source = f"torchscript:{os.path.basename(args.torchscript)}"
        # TorchScript's interpreter turns symbolic sizes into constants, so tracing through it
        # pins the frame size. torch's converter turns the TorchScript graph into an exported
        # program of aten operations first, which exports again with dynamic sizes.
        try:
            from torch._export.converter import TS2EPConverter
            # For a package of one shape, the converter sees that shape: it guards its example's
            # sizes, and the export that follows must pass those guards.
            if args.shape:
                example = torch.rand(args.batch, 3, args.shape[1], args.shape[0], device=device,
                                     dtype=dtype)
            else:
                example = torch.rand(1, 3, 64, 64, device=device, dtype=dtype)
            # (An exported program's module is in inference form already: no .eval().)
            return TS2EPConverter(script, (example,)).convert().module(), source, script
        except Exception as e:  # an older torch, or a graph the converter does not take
            print(f"export-pt2: the TorchScript converter failed ({first_line(e)}); tracing "
                  "through the interpreter instead (sizes may end up fixed)")
            return None, source, script
    name, _, attr = args.module.partition(":")
    module = getattr(importlib.import_module(name), attr or "model")()
    source = f"module:{args.module}"
    return module.to(device=device, dtype=dtype).eval(), source, None


def first_line(e):
    return (str(e).splitlines() or [type(e).__name__])[0]


def export_any(converted, script, args, device, dtype):
    """The exported program, its example and the module it came from: the converted module's
    export, else the interpreter's traced with its weights as parameters, else as constants."""
    attempts = [] if converted is None else [("the converted program", lambda: converted)]
    if script is not None:
        attempts += [("tracing through the interpreter", lambda: Wrapped(script).eval()),
                     ("tracing through the interpreter, weights as constants",
                      lambda: Wrapped(script, hidden=True).eval())]
    failures = []
    for what, make in attempts:
        try:
            module = make()
            program, example = export(module, args, device, dtype)
            if failures:
                print(f"export-pt2: exported by {what}")
            return program, example, module
        except Exception as e:
            if script is None:
                raise
            failures.append(f"{what}: {first_line(e)}")
            print(f"export-pt2: {what} does not export ({first_line(e)})")
    if args.shape:
        sys.exit(f"export-pt2: torch {torch.__version__} cannot export this TorchScript file ("
                 + "; ".join(failures) + ")")
    # Seen with torch 2.11: the converter guards the program on its example's sizes ("Guard
    # failed: x_1.size()[0] == 1"), and the interpreter turns every size it meets into a constant
    # ("You marked batch as dynamic but your code specialized it").
    sys.exit(f"export-pt2: torch {torch.__version__} cannot export this TorchScript file with a "
             "dynamic batch and frame size: its converter guards the example's sizes and tracing "
             "through the interpreter fixes them (" + "; ".join(failures) + "). Package the model "
             "for one shape (--shape, --batch), or from its Python module (--module), which "
             "exports with dynamic sizes.")


# What the package's code assumes of its input's memory layout, kept in the package's own metadata
# (read by the worker, worker/model/pt2_model.cpp). A package indexes its input with the strides of
# the example it was traced with and checks nothing at run time: a tensor of another layout gives
# wrong pixels, not an error. framemill's worker hands every model a channels-last tensor, and
# gives a package the layout its metadata names. A package of one shape is traced channels-last
# (no copy; proven on an H200 with torch 2.11); one with dynamic sizes contiguous (NCHW), as it
# was proven before (the worker then copies each batch to that layout).
INPUT_LAYOUT_KEY = "framemill_input_memory_format"
INPUT_SHAPE_KEY = "framemill_input_shape"


def channels_last(x):
    return x.contiguous(memory_format=torch.channels_last)


def export(module, args, device, dtype):
    if args.shape:
        w, h = args.shape
        example = channels_last(torch.rand(args.batch, 3, h, w, device=device, dtype=dtype))
        with torch.inference_mode():
            program = torch.export.export(module, (example,), strict=False)
        return program, example
    m = args.size_multiple
    lo, hi = -(-args.min_size // m), args.max_size // m
    batch = torch.export.Dim("batch", min=1, max=args.max_batch)
    h, w = torch.export.Dim("h", min=lo, max=hi), torch.export.Dim("w", min=lo, max=hi)
    dims = {0: batch, 2: h * m if m > 1 else h, 3: w * m if m > 1 else w}
    side = max(lo * m, min(64, hi * m))
    example = torch.rand(2, 3, side, side + m, device=device, dtype=dtype)
    with torch.inference_mode():
        # By position: a module converted from TorchScript names its argument x_1, not x.
        program = torch.export.export(module, (example,), dynamic_shapes=(dims,), strict=False)
    return program, example


def read_frames(path, args, device, dtype):
    """The batch of real frames to check on: raw rgb24, args.batch frames of args.shape."""
    w, h = args.shape
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) != args.batch * h * w * 3:
        sys.exit(f"export-pt2: {path} holds {len(raw)} bytes, not {args.batch} rgb24 frames of "
                 f"{w}x{h}")
    x = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(args.batch, h, w, 3)
    return channels_last(x.permute(0, 3, 1, 2).to(device=device, dtype=dtype) / 255.0)


def check_here(package, module, example, args):
    """Runs the package in this process: for a confined builder (framemill model compile), where
    a child process cannot start CUDA. A crash still ends the script without a package checked."""
    with torch.inference_mode():
        want = module(example).float()
        runner = torch._inductor.aoti_load_package(package)
        got = runner(example)
    got = (got[0] if isinstance(got, (list, tuple)) else got).float()
    return float((got - want).abs().max()), want.shape[-1] // example.shape[-1]


def check(package, module, example, args):
    """Runs the package in a fresh process (a crash there must not look like success here)."""
    if args.check_here:
        diff, scale = check_here(package, module, example, args)
        report_diff(diff, args)
        return scale
    with torch.inference_mode():
        want = module(example).float().cpu()
    ref = package + ".check.pt"
    torch.save({"x": example.cpu(), "want": want}, ref)
    code = (
        "import sys, torch\n"
        "d = torch.load(sys.argv[2])\n"
        "runner = torch._inductor.aoti_load_package(sys.argv[1])\n"
        "x = d['x'].to(device=sys.argv[3], dtype=getattr(torch, sys.argv[4]))\n"
        "with torch.inference_mode():\n"
        "    got = runner(x)\n"
        "got = (got[0] if isinstance(got, (list, tuple)) else got).float().cpu()\n"
        "print(float((got - d['want']).abs().max()))\n"
    )
    dtype_name = "float16" if args.precision == "fp16" else "float32"
    r = subprocess.run([sys.executable, "-c", code, package, ref, args.device, dtype_name],
                       capture_output=True, text=True)
    os.unlink(ref)
    if r.returncode != 0:
        sys.exit(f"export-pt2: loading the package failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    report_diff(float(r.stdout.strip().splitlines()[-1]), args)
    return want.shape[-1] // example.shape[-1]


def report_diff(diff, args):
    bound = 1e-2 if args.precision == "fp16" else 1e-4
    print(f"export-pt2: package output differs from the source model by at most {diff:.2e}"
          f" (bound {bound:.0e})")
    if diff > bound:
        sys.exit("export-pt2: the package's output is not the model's")


def write_card(path, args, scale, source):
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    card = {
        "card_version": 1,
        "name": args.name or os.path.splitext(os.path.basename(path))[0],
        "format": "pt2",
        "architecture": f"torch.export + AOTInductor ({args.device}, {args.precision})",
        "scale": scale,
        "channels": 3,
        "source_channel_order": "rgb",
        "source_value_range": "0-1",
        "receptive_field": 0,
        "min_size": args.min_size,
        "max_size": args.max_size,
        "size_multiple": args.size_multiple,
        "max_batch": args.batch if args.shape else args.max_batch,
        "device": args.device,
        "precision": args.precision,
        "licence": "",
        "source": source,
        "sha256": digest,
    }
    if args.shape:
        card["min_size"] = min(args.shape)
        card["max_size"] = max(args.shape)
        card["size_multiple"] = 1
        card["fixed_width"], card["fixed_height"] = args.shape
        card["fixed_batch"] = args.batch
    tmp = path + ".json.tmp"
    with open(tmp, "w") as f:
        json.dump(card, f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path + ".json")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--torchscript")
    src.add_argument("--module")
    p.add_argument("out")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--precision", choices=["fp32", "fp16"])
    p.add_argument("--min-size", type=int, default=32)
    p.add_argument("--max-size", type=int, default=4096)
    p.add_argument("--max-batch", type=int, default=16)
    p.add_argument("--size-multiple", type=int, default=1)
    p.add_argument("--shape", help="WxH")
    p.add_argument("--batch", type=int)
    p.add_argument("--max-autotune", action="store_true")
    p.add_argument("--name")
    p.add_argument("--check-here", action="store_true")
    p.add_argument("--check-frames")
    args = p.parse_args()
    if args.shape:
        try:
            w, h = (int(v) for v in args.shape.lower().split("x"))
        except ValueError:
            sys.exit("export-pt2: --shape takes WIDTHxHEIGHT, e.g. 1920x1080")
        if w < 1 or h < 1:
            sys.exit("export-pt2: --shape needs positive sides")
        args.shape = (w, h)
        args.batch = 8 if args.batch is None else args.batch
        if args.batch < 1:
            sys.exit("export-pt2: --batch must be at least 1")
    elif args.batch is not None or args.check_frames:
        sys.exit("export-pt2: --batch and --check-frames go with --shape (a package for one "
                 "shape)")
    args.precision = args.precision or ("fp16" if args.device == "cuda" else "fp32")
    if args.precision == "fp16" and args.device != "cuda":
        sys.exit("export-pt2: fp16 needs --device cuda")
    if not args.out.endswith(".pt2"):
        sys.exit("export-pt2: OUT must end in .pt2")
    device = torch.device(args.device)
    dtype = torch.float16 if args.precision == "fp16" else torch.float32
    converted, source, script = load_source(args, device, dtype)
    program, example, module = export_any(converted, script, args, device, dtype)
    tmp = args.out + ".tmp.pt2"
    metadata = {INPUT_LAYOUT_KEY: "channels_last" if args.shape else "contiguous"}
    if args.shape:
        # A package of one shape reads past an input of another: the worker refuses those.
        metadata[INPUT_SHAPE_KEY] = "x".join(str(d) for d in example.shape)
    configs = {"aot_inductor.metadata": metadata}
    if args.max_autotune:
        configs["max_autotune"] = True
    torch._inductor.aoti_compile_and_package(program, package_path=tmp, inductor_configs=configs)
    if args.check_frames:
        example = read_frames(args.check_frames, args, device, dtype)
        print(f"export-pt2: checking on the {args.batch} frames of {args.check_frames}")
    # Against the source itself where it is TorchScript: the file the job would run otherwise.
    scale = check(tmp, script if script is not None else module, example, args)
    os.replace(tmp, args.out)
    write_card(args.out, args, scale, source)
    print(f"export-pt2: wrote {args.out} and {args.out}.json (scale {scale})")


if __name__ == "__main__":
    main()
