set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT/p2
ib=$(python3 -c 'import torch._inductor, os; print(os.path.dirname(torch._inductor.__file__))')
echo "== cpp_builder mentions"
grep -n "static-libstdc\|libstdc++\|static_libstdcxx\|-static\b\|nostdlib\|\"-static" $ib/cpp_builder.py | head -30
grep -rn "static-libstdc\|libstdc++" $ib/*.py $ib/codegen/*.py 2>/dev/null | grep -v cpp_builder.py | head -10
cat > /tmp/gxx-log <<'X'
#!/bin/bash
echo "$@" >> /tmp/gxx-args.log
exec g++ "$@"
X
chmod +x /tmp/gxx-log; rm -f /tmp/gxx-args.log
cat >"$OUT/p2/tinynet.py" <<'PY'
import torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.b = torch.nn.Conv2d(16, 3, 3, padding=1)
    def forward(self, x):
        return x + 0.1 * self.b(torch.relu(self.a(x)))
def model():
    return Net()
PY
echo "== export with CXX logging"
CXX=/tmp/gxx-log PYTHONPATH="$OUT/p2" python3 scripts/export-pt2.py --module tinynet:model "$OUT/p2/t.pt2" --max-size 1024 --max-batch 8 2>&1 | grep -v Warn | tail -5
echo "== link/compile commands (flags only)"
cat /tmp/gxx-args.log | tr ' ' '\n' | grep -E '^-(static|l|shared|nostd|Wl|B|fvis|D_GLIBCXX)' | sort | uniq -c
wc -l /tmp/gxx-args.log
