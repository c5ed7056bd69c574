#!/usr/bin/env python3
"""Runs GPU experiments described by case files (scripts/gpu/cases/*.json) on a build in build-gpu
(scripts/gpu/build-and-test.sh).

usage: run-case.py [--dry-run] [--list] [--frames N] [--runs REGEX] [--job KEY=JSON ...]
                   [--config KEY=JSON ...] [--model NAME=FILE ...] [--budget S] CASE|all ...

A case (CASE.json) is data, its keys:
  about    one line: what it measures
  inputs   NAME -> a recipe: {"lavfi": SOURCE, "frames": N, "x264": [ARGS] (default veryfast,
           crf 20), "audio": LAVFI_SOURCE, "loop_to": N (the clip looped by stream copy),
           "frames_flag": true (--frames sets its length)}, or {"cut": INPUT, "frames": N} (its
           first frames), or {"command": [ARGV]} (a program that prints the clip's path); with
           "needs": [PATHS], made only where those exist
  models   NAME -> {"export": EXAMPLE} | {"import": NAME[, "packages": DIR]} |
           {"export_or_import": NAME} | {"package": MODEL, "args": [export-pt2.py ARGS],
           "module": MODULE (if --torchscript fails)} | {"file": PATH}
  job, config, env   keys every run starts from (a run's own keys win; the environment passes
           through to every command, a case's env on top of it, null unsetting a variable)
  rounds   how many times the runs go round (names get -r1, -r2, ...)
  runs     in order, each with "name", "about", "env", "needs" (paths; absent: skipped, saying
           so) and one of
    bench    {"input", "model", "args"}: framemill-bench in build-gpu; its own rows are the
             baselines (the per-frame loop, the transcode, the model alone)
    run      {"job", "config", "ext", "profile", "frames", "expect", "expect_exit", "time",
             "show", "lines"}: `framemill run`, its job and config files written by json.dump;
             profile copies the workers' logs and shows their profile lines, frames hashes the
             output's frames, expect is a regex the log must hold, expect_exit "nonzero" when
             failing is the point, time runs it under /usr/bin/time -v, show picks log lines
    command  [ARGV] in the repository root ("cwd": "build" for build-gpu)
    shell    a bash line, for what is a pipeline (the decoding ceiling, collecting logs)
  compare  "same_frames" (every run with "frames"), or {"same_frames": [RUNS], "psnr": [RUN, RUN]}
           (either key or both)
Strings may hold {input:NAME}, {model:NAME}, {output} (the run's own output), {output:RUN},
{out}, {work}, {root}, {build}, {gpus} (every GPU: "0,1"). --job and --config add keys to every
run's job and config (e.g. --job batch=4 --job 'encoder={"preset": "ultrafast"}'; null leaves a
key out: --job workers=null --job 'gpus=[0,1]' --job workers_per_gpu=1); --model
NAME=FILE takes a case's model from a file.
Inputs and models are made once into --work (default build-gpu/cases: they outlive a call while
the machine stays warm); job files and logs go to $OUT/CASE (default ./gpu-out). Every command runs
under timeout, with what is left of --budget (default 540 s). --dry-run prints the commands and
job files without running anything (no GPU needed).
Python on the GPU machine is torch's; the case files are JSON (not KEY=VALUE) because the jobs
they hold are JSON objects, read here by the json module (the machine may have no jq).
"""
import argparse
import glob
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CASES = os.path.join(ROOT, "scripts", "gpu", "cases")


class Driver:
    def __init__(self, args):
        self.a = args
        self.out = os.path.realpath(os.environ.get("OUT", os.path.join(ROOT, "gpu-out")))
        self.build = os.path.join(ROOT, "build-gpu")
        self.work = os.path.realpath(args.work)
        self.deadline = time.monotonic() + args.budget
        self.vars = {"out": self.out, "work": self.work, "root": ROOT, "build": self.build,
                     "gpus": self.gpus()}
        self.inputs, self.models, self.outputs = {}, {}, {}

    def gpus(self):
        try:
            n = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count("\n")
        except OSError:
            n = 0
        return ",".join(str(i) for i in range(max(n, 1)))

    def fill(self, v, output=None):
        """Replaces the {...} placeholders in every string of v."""
        if isinstance(v, dict):
            return {k: self.fill(x, output) for k, x in v.items()}
        if isinstance(v, list):
            return [self.fill(x, output) for x in v]
        if not isinstance(v, str):
            return v

        def one(m):
            kind, _, name = m.group(1).partition(":")
            if kind == "input":
                return self.inputs[name]
            if kind == "model":
                return self.models[name]
            if kind == "output":
                return self.outputs[name] if name else output
            return self.vars[kind]
        return re.sub(r"\{(input:[\w.-]+|model:[\w.-]+|output(?::[\w.-]+)?|out|work|root|build|gpus)\}",
                      one, v)

    # Runs argv under timeout (what is left of the budget); returns (exit status, output).
    def sh(self, argv, env=None, cwd=ROOT, log=None, quiet=False):
        left = int(self.deadline - time.monotonic())
        shown = " ".join(shlex.quote(a) for a in argv)
        if env:
            shown = " ".join(f"-u {k}" if v is None else f"{k}={shlex.quote(str(v))}"
                             for k, v in env.items()) + " " + shown
            shown = ("env " if any(v is None for v in env.values()) else "") + shown
        if cwd != ROOT:
            shown = f"(cd {os.path.relpath(cwd, ROOT)} && {shown})"
        if self.a.dry_run:
            print(f"+ {shown}" + (f" >{log} 2>&1" if log else ""))
            return 0, ""
        if left < 10:
            print(f"run-case: out of time (--budget) before: {shown}")
            return 124, ""
        full = dict(os.environ, **{k: str(v) for k, v in (env or {}).items() if v is not None})
        for k in [k for k, v in (env or {}).items() if v is None]:  # null: unset
            full.pop(k, None)
        p = subprocess.run(["timeout", str(left)] + argv, env=full, cwd=cwd, text=True, errors="replace",
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if log:
            with open(log, "w") as f:
                f.write(p.stdout)
        if not quiet and not log:
            sys.stdout.write(p.stdout)
        return p.returncode, p.stdout

    def write_json(self, path, obj):
        if self.a.dry_run:
            print(f"+ cat >{path} <<'EOF'\n{json.dumps(obj, indent=2)}\nEOF")
            return
        with open(path, "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")

    def make_input(self, name, r):
        r = dict(r)
        if self.a.frames and r.get("frames_flag"):  # --frames sizes the inputs that say so
            r["loop_to" if "loop_to" in r else "frames"] = self.a.frames
        missing = [p for p in self.fill(r.get("needs", [])) if not os.path.exists(p)]
        if missing and not self.a.dry_run:  # its runs skip too, saying so
            print(f"run-case: input {name} not made: no {', '.join(missing)}")
            self.inputs[name] = ""
            return
        if "command" in r:  # a program that prints the clip's path
            if self.a.dry_run:
                self.sh(self.fill(r["command"]))
                self.inputs[name] = f"<the path {r['command'][0]} prints>"
            else:
                rc, text = self.sh(self.fill(r["command"]), quiet=True)
                self.inputs[name] = text.strip().splitlines()[-1] if rc == 0 and text.strip() else ""
            return
        if "cut" in r:  # the first frames of another input, by stream copy
            src = self.inputs[r["cut"]]
            path = f"{src[:-4]}-first{r['frames']}.mp4"
            if not os.path.exists(path):
                self.sh(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", src, "-map", "0", "-c", "copy",
                         "-frames:v", str(r["frames"]), path])
            self.inputs[name] = path
            return
        tag = hashlib.sha1(json.dumps(r, sort_keys=True).encode()).hexdigest()[:8]
        path = os.path.join(self.work, "inputs", f"{name}-{tag}.mp4")
        self.inputs[name] = path
        if os.path.exists(path):
            return
        base = path[:-4] + "-base.mp4" if "loop_to" in r else path
        argv = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", r["lavfi"]]
        if "audio" in r:
            argv += ["-f", "lavfi", "-i", r["audio"], "-shortest"]
        argv += ["-frames:v", str(r["frames"]), "-c:v", "libx264"]
        argv += r.get("x264", ["-preset", "veryfast", "-crf", "20"]) + ["-pix_fmt", "yuv420p"]
        argv += ["-c:a", "aac"] if "audio" in r else []
        self.sh(argv + [base])
        if "loop_to" in r:  # whole loops of the base clip, by stream copy
            loops = -(-r["loop_to"] // r["frames"])
            self.sh(["ffmpeg", "-nostdin", "-v", "error", "-y", "-stream_loop", str(loops - 1), "-i", base,
                     "-map", "0", "-c", "copy", path])

    def make_model(self, name, r):
        if name in self.a.model:  # --model NAME=FILE
            self.models[name] = os.path.realpath(self.a.model[name])
            return
        if "file" in r:
            self.models[name] = self.fill(r["file"])
            return
        fm = os.path.join(self.build, "framemill")
        # Named by what it is, not by the case's name for it: cases share what they make.
        base = r.get("export") or r.get("import") or r.get("export_or_import") or name
        path = os.path.join(self.work, "models", base + (".pt2" if "package" in r else ".pt"))
        self.models[name] = path
        if os.path.exists(path):
            return
        if "export" in r:
            self.sh([fm, "model", "export", r["export"], path], quiet=True)
        elif "import" in r:
            pk = r.get("packages", ".deps/model-packages")
            self.sh([fm, "model", "import", r["import"], path, "--packages", pk])
        elif "export_or_import" in r:  # an example model, else an imported one
            rc, _ = self.sh([fm, "model", "export", r["export_or_import"], path], quiet=True)
            if rc != 0:
                self.sh([fm, "model", "import", r["export_or_import"], path, "--packages",
                         r.get("packages", ".deps/model-packages")])
        elif "package" in r:  # scripts/export-pt2.py from the TorchScript of another model
            ts = self.models[r["package"]]
            args = [path] + r.get("args", []) + ["--name", name]
            t0 = time.monotonic()
            self.sh(["python3", "scripts/export-pt2.py", "--torchscript", ts] + args)
            if not os.path.exists(path) and "module" in r and not self.a.dry_run:
                print(f"run-case: {name}: from its torch.nn.Module ({r['module']}) instead")
                self.sh(["python3", "scripts/export-pt2.py", "--module", r["module"]] + args,
                        env={"RESTORE_PT": ts, "PYTHONPATH": "scripts/gpu"})
            if not self.a.dry_run:
                print(f"run-case: packaging {name} took {time.monotonic() - t0:.0f} s")

    def frames_hash(self, video):
        """A hash of the decoded frames alone (framemd5 without its header)."""
        if self.a.dry_run:
            return "dry-run"
        _, text = self.sh(["ffmpeg", "-nostdin", "-v", "error", "-i", video, "-map", "0:v", "-f",
                           "framemd5", "-"], quiet=True)
        lines = "".join(x for x in text.splitlines(True) if not x.startswith("#"))
        return hashlib.md5(lines.encode()).hexdigest()[:16]

    def do_run(self, case, name, spec, env, d):
        job = dict(case.get("job", {}), **spec.get("job", {}))
        job.update(self.a.job)
        output = os.path.join(self.work, case["name"], name + spec.get("ext", ".mkv"))
        self.outputs[name] = output
        job.setdefault("output", "{output}")
        job = {k: v for k, v in self.fill(job, output).items() if v is not None}  # null: left out
        config = self.fill(dict(case.get("config", {}), **spec.get("config", {}), **self.a.config))
        jf, cf, log = (os.path.join(d, name + x) for x in (".job.json", ".config.json", ".log"))
        self.write_json(jf, job)
        self.write_json(cf, config)
        if not self.a.dry_run:
            os.makedirs(os.path.dirname(output), exist_ok=True)
        argv = [os.path.join(self.build, "framemill"), "run", "--config", cf, jf]
        if spec.get("time"):
            argv = ["/usr/bin/time", "-v"] + argv
        stop, copier = threading.Event(), None
        if spec.get("profile") and not self.a.dry_run:  # the workers' logs live in the scratch dir
            wdir = os.path.join(d, name + "-worker")
            os.makedirs(wdir, exist_ok=True)
            # `framemill run` keeps its work in .NAME.framemill beside the output (kept_work.h); a
            # part's scratch is .framemill-work.*
            out_dir, out_name = os.path.split(output)
            scratches = [os.path.join(out_dir, f".{out_name}.framemill", "worker-*.log"),
                         os.path.join(out_dir, ".framemill-work.*", "worker-*.log")]

            def copy():
                while not stop.wait(0.2):
                    for f in [f for pattern in scratches for f in glob.glob(pattern)]:
                        subprocess.run(["cp", f, wdir], stderr=subprocess.DEVNULL)
            copier = threading.Thread(target=copy)
            copier.start()
        rc, text = self.sh(argv, env=env, log=log)
        if copier:
            stop.set()
            copier.join()
        if self.a.dry_run:
            return "dry-run" if spec.get("frames") else None
        want = spec.get("expect_exit", "zero")
        print(f"exit {rc}" + ("" if (rc == 0) == (want == "zero") else f" (expected {want})"))
        show = spec.get("show", r"wrote|stages:|workers |failed|error|Maximum resident|Elapsed")
        for line in [x for x in text.splitlines() if re.search(show, x, re.I)][-spec.get("lines", 6):]:
            print("  " + line[:400])
        if spec.get("expect") and not self.a.dry_run:
            print(f"  expect /{spec['expect']}/: " + ("ok" if re.search(spec["expect"], text) else "MISSING"))
        if spec.get("profile") and not self.a.dry_run:
            lines = []
            for f in sorted(glob.glob(os.path.join(d, name + "-worker", "*.log"))):
                lines += [x.rstrip() for x in open(f, errors="replace")
                          if re.search(r"profile:|after main\(\)|a spare, started", x)]
            print("\n".join("  " + x for x in lines[-6:]))
        if spec.get("frames"):
            return self.frames_hash(output)
        return None

    def run_case(self, path):
        case = json.load(open(path))
        case["name"] = os.path.basename(path)[:-5]
        d = os.path.join(self.out, case["name"])
        print(f"== {case['name']}: {case['about']}")
        if not self.a.dry_run:
            os.makedirs(d, exist_ok=True)
            os.makedirs(os.path.join(self.work, "inputs"), exist_ok=True)
            os.makedirs(os.path.join(self.work, "models"), exist_ok=True)
        for name, r in case.get("inputs", {}).items():
            self.make_input(name, r)
        for name, r in case.get("models", {}).items():
            self.make_model(name, r)
        hashes = {}
        for rnd in range(1, case.get("rounds", 1) + 1):
            for spec in case["runs"]:
                name = spec["name"] + (f"-r{rnd}" if case.get("rounds", 1) > 1 else "")
                if self.a.runs and not re.search(self.a.runs, spec["name"]):
                    continue
                missing = [p for p in self.fill(spec.get("needs", [])) if not os.path.exists(p)]
                if missing and not self.a.dry_run:
                    print(f"-- {name}: skipped: no {', '.join(missing)}")
                    continue
                print(f"-- {name}: {spec.get('about', '')}")
                env = self.fill(dict(case.get("env", {}), **spec.get("env", {})))
                if "bench" in spec:
                    b = self.fill(spec["bench"])
                    self.sh([os.path.join(self.build, "framemill-bench"), b["input"], b["model"]] + b["args"],
                            env=env, cwd=self.build)
                elif "run" in spec:
                    h = self.do_run(case, name, spec["run"], env, d)
                    if h is not None and not self.a.dry_run:
                        hashes[name] = h
                        print(f"  frames {h}")
                elif "command" in spec:
                    self.sh(self.fill(spec["command"]), env=env,
                            cwd=self.build if spec.get("cwd") == "build" else ROOT)
                elif "shell" in spec:
                    self.sh(["bash", "-c", self.fill(spec["shell"])], env=env)
        cmp = case.get("compare")
        if self.a.dry_run:
            if cmp:
                print(f"+ compare {json.dumps(cmp)} of the runs' outputs")
        elif cmp == "same_frames" and hashes:
            same = len(set(hashes.values())) == 1
            print(f"{case['name']}: " + ("every run's output holds the same frames" if same else
                                         "OUTPUTS DIFFER: " + json.dumps(hashes)))
        elif isinstance(cmp, dict):
            self.compare_named(cmp, hashes)

    def compare_named(self, cmp, hashes):
        if "same_frames" in cmp:  # these runs' outputs hold the same frames
            ran = {n: hashes[n] for n in cmp["same_frames"] if n in hashes}
            if len(ran) < 2:
                print(f"same frames of {cmp['same_frames']}: not compared (fewer than two ran)")
            else:
                same = len(set(ran.values())) == 1
                print(f"same frames of {sorted(ran)}: " +
                      ("yes" if same else "NO: " + json.dumps(ran)))
        if "psnr" in cmp:
            if not all(n in self.outputs for n in cmp["psnr"]):
                print(f"psnr of {cmp['psnr']}: not compared (not every run ran in this call)")
                return
            a, b = (self.outputs[n] for n in cmp["psnr"])
            _, text = self.sh(["ffmpeg", "-nostdin", "-i", a, "-i", b, "-lavfi", "psnr", "-f", "null", "-"],
                              quiet=True)
            print("\n".join([x for x in text.splitlines() if "PSNR" in x][-1:]))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cases", nargs="*", help="case names (files in scripts/gpu/cases), or all")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--list", action="store_true", help="list the cases and what each measures")
    p.add_argument("--frames", type=int, help='length of the inputs marked "frames_flag"')
    p.add_argument("--runs", help="only the runs whose name matches this regex")
    kv = lambda s: (s.split("=", 1)[0], json.loads(s.split("=", 1)[1]))  # noqa: E731
    p.add_argument("--job", type=kv, action="append", default=[], help='job key, e.g. batch=4')
    p.add_argument("--config", type=kv, action="append", default=[], help="config key")
    p.add_argument("--model", type=lambda s: s.split("=", 1), action="append", default=[],
                   help="a case's model NAME taken from FILE instead")
    p.add_argument("--budget", type=int, default=540, help="seconds for the whole call")
    p.add_argument("--work", default=os.path.join(ROOT, "build-gpu", "cases"))
    a = p.parse_args()
    a.job, a.config, a.model = dict(a.job), dict(a.config), dict(a.model)
    names = sorted(f[:-5] for f in os.listdir(CASES) if f.endswith(".json"))
    if a.list or not a.cases:
        for n in names:
            print(f"{n:16} {json.load(open(os.path.join(CASES, n + '.json')))['about']}")
        return 0
    todo = names if a.cases == ["all"] else a.cases
    for n in todo:
        if n not in names:
            sys.exit(f"run-case: no case {n} (scripts/gpu/cases/{n}.json)")
    os.environ["PATH"] = os.path.join(ROOT, ".deps", "ffmpeg-static") + ":" + os.environ["PATH"]
    drv = Driver(a)
    for n in todo:
        drv.run_case(os.path.join(CASES, n + ".json"))
    if not a.dry_run and shutil.which("nvidia-smi"):
        drv.sh(["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
