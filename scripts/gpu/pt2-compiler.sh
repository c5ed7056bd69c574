#!/usr/bin/env bash
# Which compiler AOTInductor links a package with, and whether the package then carries its own
# static C++ runtime (the crash on load): the small net of scripts/gpu/tinynet.py packaged twice, each
# with a fresh Inductor cache, once by scripts/export-pt2.py (its compiler wrapper) and once with
# Inductor's own choice of compiler; for each, the package's NEEDED libraries and whether it
# defines libstdc++'s locale ids, and whether it loads.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT/cc"
which -a g++ c++ gcc | tr '\n' ' '; echo; readlink -f "$(which g++)"; g++ --version | head -1
env | grep -i '^CXX\|^CC=\|TORCHINDUCTOR' || true
python3 -c 'from torch._inductor import cpp_builder as c; print("inductor compiler:", c.get_cpp_compiler())' 2>&1 | tail -1
inspect() {  # PACKAGE
  python3 - "$1" <<'PY'
import sys, zipfile, subprocess, tempfile, os
d = tempfile.mkdtemp(); zipfile.ZipFile(sys.argv[1]).extractall(d)
so = [os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith(".so")][0]
needed = [l.split("[")[1].rstrip("]") for l in subprocess.run(["readelf", "-d", so], capture_output=True, text=True).stdout.splitlines() if "NEEDED" in l]
syms = subprocess.run(["nm", "-C", "--defined-only", so], capture_output=True, text=True).stdout
print("  NEEDED:", " ".join(needed), "| defines std::locale::id::_M_id:", "std::locale::id::_M_id" in syms)
PY
}
echo "== export-pt2.py (its wrapper)"
TORCHINDUCTOR_CACHE_DIR="$OUT/cc/cache1" PYTHONPATH=scripts/gpu timeout 200 python3 scripts/export-pt2.py \
  --module tinynet:model "$OUT/cc/a.pt2" --max-size 512 --max-batch 4 2>&1 | grep export-pt2 | tail -3
[ -f "$OUT/cc/a.pt2" ] && inspect "$OUT/cc/a.pt2" || inspect "$OUT/cc/a.pt2.tmp.pt2"
echo "== Inductor's own compiler"
TORCHINDUCTOR_CACHE_DIR="$OUT/cc/cache2" PYTHONPATH=scripts/gpu timeout 200 python3 - "$OUT/cc/b.pt2" <<'PY' 2>&1 | grep -v Warn | tail -2
import sys, torch, tinynet
m = tinynet.model().cuda().half().eval()
x = torch.rand(1, 3, 64, 64, device="cuda", dtype=torch.half)
ep = torch.export.export(m, (x,))
torch._inductor.aoti_compile_and_package(ep, package_path=sys.argv[1])
print("packaged")
PY
inspect "$OUT/cc/b.pt2"
python3 -c "import sys,torch; r=torch._inductor.aoti_load_package(sys.argv[1]); print('loads:', r(torch.rand(1,3,64,64,device='cuda',dtype=torch.half)).shape)" "$OUT/cc/b.pt2" 2>&1 | tail -1; echo "exit $?"
