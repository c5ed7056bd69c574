#!/usr/bin/env bash
# Why a .pt2 package crashes when loaded on this machine: the compilers and C++ runtimes in play,
# a small package built with scripts/export-pt2.py, and, when loading crashes, a backtrace and
# the dynamic linker's bindings of the package's std::regex symbols. Writes to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/pt2"
log() { echo "== $*"; }
log "compilers and runtimes"
g++ --version | head -1
python3 - <<'PY'
import torch, re
cfg = torch.__config__.show()
print("torch", torch.__version__, "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI)
print("\n".join(l for l in cfg.splitlines() if re.search(r"GCC|Compiler|CXX_FLAGS", l))[:1500])
import torch._inductor.config as c
print("inductor cxx", c.cpp.cxx)
PY
lib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
ldd "$lib/libtorch_cpu.so" | grep -E "stdc|gcc_s"
strings "$lib/libtorch_cpu.so" | grep -E "^GCC: \(" | sort | uniq -c | head -5
log "export"
t0=$(date +%s.%N)
PYTHONPATH=scripts/gpu python3 scripts/export-pt2.py --module tinynet:model "$OUT/pt2/tiny.pt2" \
  --max-size 1024 --max-batch 8 2>&1 | grep -v Warning | tail -20
echo "export took $(echo "$(date +%s.%N) - $t0" | bc) s"
ls -la "$OUT/pt2"
pkg="$OUT/pt2/tiny.pt2"; [ -f "$pkg" ] || pkg="$OUT/pt2/tiny.pt2.tmp.pt2"
python3 -c "import zipfile,sys; [print(i.filename, i.file_size) for i in zipfile.ZipFile(sys.argv[1]).infolist()]" "$pkg" | head -30
rm -rf "$OUT/pt2/x" && mkdir -p "$OUT/pt2/x" && (cd "$OUT/pt2/x" && python3 -c "import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extractall('.')" "$pkg")
so=$(find "$OUT/pt2/x" -name '*.so' | head -1)
log "the package's shared object: $so"
ldd "$so" | head
strings "$so" | grep -E "^GCC: \(" | sort | uniq -c
echo "regex symbols it exports (weak/unique):"; nm -D --defined-only "$so" | grep -c regex
nm -D --defined-only "$so" | grep -E " [WVu] " | grep regex | head -5
echo "regex symbols libtorch exports:"; for l in "$lib"/libtorch_cpu.so "$lib"/libc10.so; do echo "$l $(nm -D --defined-only "$l" | grep -c '_Executor')"; done
cat >"$OUT/pt2/load.py" <<'PY'
import sys, torch
r = torch._inductor.aoti_load_package(sys.argv[1])
x = torch.rand(1, 3, 64, 64, device="cuda", dtype=torch.float16)
print("loaded; output", r(x).shape)
PY
log "load in python"
python3 -X faulthandler "$OUT/pt2/load.py" "$pkg" 2>&1 | tail -25; echo "exit ${PIPESTATUS[0]}"
log "bindings of regex executor symbols (LD_DEBUG)"
LD_DEBUG=bindings LD_DEBUG_OUTPUT="$OUT/pt2/ldb" python3 "$OUT/pt2/load.py" "$pkg" >/dev/null 2>&1
grep -h "_Executor\|regex" "$OUT"/pt2/ldb.* | grep -i "$(basename "$so")\|wrapper" | head -20
grep -h "basic_regex\|_Compiler\|_Executor" "$OUT"/pt2/ldb.* | awk '{for(i=1;i<=NF;i++) if($i=="to") print $(i+1)}' | sort | uniq -c | head
rm -f "$OUT"/pt2/ldb.*
log "gdb"
if command -v gdb >/dev/null; then G=gdb; else G=$(command -v cuda-gdb); fi
echo "debugger: $G"
timeout 240 $G -q -batch -ex run -ex bt -ex "info sharedlibrary" --args python3 "$OUT/pt2/load.py" "$pkg" 2>&1 |
  grep -v "^\[New Thread\|^\[Thread\|libthread_db" | grep -A40 "SIGSEGV" | head -60
