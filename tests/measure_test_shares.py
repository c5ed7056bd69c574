#!/usr/bin/env python3
"""Measures how much of a core each test keeps busy, and writes tests/test_shares.cmake.

    tests/measure_test_shares.py BUILD_DIR [CTEST_ARGS...]

Runs `ctest --test-dir BUILD_DIR CTEST_ARGS` (for example `-j 2`) while it samples /proc four
times a second: a test's CPU time is that of the process ctest started and of everything below
it (children that ended are counted in their parent's). Its wall time is ctest's own figure. A
test's share is its CPU time over its wall time in quarter cores, rounded up, 1 to 8: ctest runs
the suite with four slots a core (scripts/test.sh) and a test takes its share of them (PROCESSORS),
so tests that mostly wait (on Slurm's scheduler, a timeout, a backoff) run beside the others
instead of holding a core, and those that keep two cores busy count as two.

Run it on an idle machine with the suite at one test a core (`-j $(nproc)`, every share 4, as
CMake sets without the table): a test's wall time is then its own. It rewrites the table with
the tests whose share is not 4; a test missing from it (new, or renamed) takes 4, a core.
Processes a test hands to another parent (the Slurm daemons run the parts' tasks) are not
counted: such a test's share is its own processes'.
"""
import json
import math
import os
import re
import subprocess
import sys
import threading
import time

HZ = os.sysconf("SC_CLK_TCK")
SLOTS_PER_CORE = 4


def read_stat(pid):
    """(parent pid, CPU seconds of the process and its waited-for children), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return int(fields[1]), (utime + stime + cutime + cstime) / HZ


def read_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def test_commands(build_dir):
    """ctest's command line of every test -> its name."""
    listing = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"],
                             capture_output=True, text=True, check=True).stdout
    return {tuple(t["command"]): t["name"]
            for t in json.loads(listing)["tests"] if t.get("command")}


def test_name(argv, commands):
    """The test a process ctest started runs: its command line is the test's, after the
    interpreter the kernel puts before a script's."""
    for skip in range(0, min(3, len(argv))):
        name = commands.get(tuple(argv[skip:]))
        if name:
            return name
    return " ".join(argv)


def sample_once(ctest_pid, commands, cpu):
    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            s = read_stat(entry)
            if s:
                procs[int(entry)] = s
    roots = {p for p, (parent, _) in procs.items() if parent == ctest_pid}
    totals = {r: procs[r][1] for r in roots}
    for p, (parent, seconds) in procs.items():
        q, hops = parent, 0
        while q in procs and q not in roots and hops < 64:
            q, hops = procs[q][0], hops + 1
        if q in roots and p not in roots:
            totals[q] += seconds
    for r, seconds in totals.items():
        name = test_name(read_cmdline(r), commands)
        cpu[name] = max(cpu.get(name, 0.0), seconds)


def sample(ctest_pid, commands, cpu, stop):
    """Keeps, per test, the most CPU seen in its process tree. A process that ends while it is
    read is skipped; a sample that fails is said and the next one taken."""
    while not stop.is_set():
        try:
            sample_once(ctest_pid, commands, cpu)
        except (OSError, ValueError, IndexError) as e:
            print(f"measure_test_shares: a sample failed: {e!r}", file=sys.stderr)
        time.sleep(0.25)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build_dir = sys.argv[1]
    commands = test_commands(build_dir)
    ctest = subprocess.Popen(["ctest", "--test-dir", build_dir] + sys.argv[2:],
                             stdout=subprocess.PIPE, text=True)
    cpu, stop = {}, threading.Event()
    sampler = threading.Thread(target=sample, args=(ctest.pid, commands, cpu, stop))
    sampler.start()
    wall = {}
    line_re = re.compile(r"Test +#\d+: (.*?) \.+.*?(Passed|Skipped|Failed).*? ([0-9.]+) sec")
    for line in ctest.stdout:
        sys.stdout.write(line)
        m = line_re.search(line)
        if m and m.group(2) == "Passed":  # a failed or skipped test's time says nothing
            wall[m.group(1)] = float(m.group(3))
    ctest.wait()
    stop.set()
    sampler.join()

    shares = {}
    for name, seconds in wall.items():
        used = cpu.get(name)
        if used is None or seconds < 1.0:
            continue  # too short to tell: a core
        share = min(2 * SLOTS_PER_CORE,
                    max(1, math.ceil(SLOTS_PER_CORE * used / seconds - 0.25)))
        if share != SLOTS_PER_CORE:
            shares[name] = (share, used, seconds)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_shares.cmake")
    write_table(out, shares)
    print(f"{out}: {len(shares)} tests not at one core; the suite's CPU "
          f"{sum(cpu.values()):.0f} s, its tests' wall {sum(wall.values()):.0f} s")
    sys.exit(ctest.returncode)


def write_table(path, shares):
    """Keeps the file's opening comment; the rest is one line a test."""
    with open(path) as f:
        head = f.read().split("\nset_tests_properties(")[0].rstrip("\n")
    rows = [f"set_tests_properties([==[{name}]==] PROPERTIES PROCESSORS {share})"
            f"  # {used:.0f} s CPU in {seconds:.0f} s"
            for name, (share, used, seconds) in sorted(shares.items())]
    with open(path, "w") as f:
        f.write(head + "\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
