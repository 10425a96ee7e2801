#!/usr/bin/env bash
# Device check of measured shares on a shared GPU (SPEC §11, issue 35), on a machine with an NVIDIA GPU, its
# driver and PyTorch (one command):
#   scripts/device/shared-gpu.sh [EAI_GPU_BINARY]
# 1. builds eai-gpu with --features nvml, unless a binary built so is given;
# 2. times one matrix product on the GPU alone;
# 3. starts two processes on GPU 0, busy70 and busy30 (their executables are links to python, so NVML names them
#    apart: host workloads `busy70` and `busy30`), each doing products for SHARE_A (0.7) and SHARE_B (0.3) of
#    every 100 ms;
# 4. runs `eai-gpu sampler --nvml --dry-run --interval 15s` while they run (RUN_S, 60 s, of whole windows);
# 5. prints, per window, each process's measured share (its sample's gpu_fraction, share_method "measured") next
#    to what it did (products done x the time of one alone / the window), and exits 1 when one is more than
#    TOLERANCE (0.10) off, or when a window lacks a measured share.
# Env: SHARE_A, SHARE_B, RUN_S, MATMUL_N (8192), TOLERANCE. Not run in CI: it needs the GPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARE_A=${SHARE_A:-0.7}
SHARE_B=${SHARE_B:-0.3}
RUN_S=${RUN_S:-60}
TOLERANCE=${TOLERANCE:-0.10}
INTERVAL_S=15
export MATMUL_N=${MATMUL_N:-8192}

python=$(command -v python3 || command -v python) || { echo "python3 with PyTorch is needed" >&2; exit 1; }
"$python" -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"' \
  || { echo "PyTorch cannot see a CUDA device" >&2; exit 1; }

if [ $# -ge 1 ]; then
  bin=$1
else
  command -v cargo >/dev/null || { echo "cargo is needed to build eai-gpu (or pass a binary built with --features nvml)" >&2; exit 1; }
  echo "== build (--features nvml)"
  cargo build -p eai-gpu --features nvml
  bin="${CARGO_TARGET_DIR:-target}/debug/eai-gpu"
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

cat > "$tmp/worker.py" <<'PY'
# calibrate: prints the seconds of one product on the GPU alone.
# run SHARE T_OP UNTIL OUT: products for SHARE of every 100 ms until UNTIL (epoch s); writes the end time and
# product count of each 100 ms cycle to OUT (JSON).
import json, os, sys, time
import torch
n = int(os.environ["MATMUL_N"])
a = torch.randn(n, n, device="cuda:0", dtype=torch.float16)
b = torch.randn(n, n, device="cuda:0", dtype=torch.float16)
c = torch.empty(n, n, device="cuda:0", dtype=torch.float16)
def products(k):
    for _ in range(k):
        torch.mm(a, b, out=c)
    torch.cuda.synchronize()
products(20)
if sys.argv[1] == "calibrate":
    t0 = time.perf_counter(); products(100)
    print((time.perf_counter() - t0) / 100)
    sys.exit(0)
share, t_op, until, out = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
period = 0.1
k = max(1, round(share * period / t_op))
cycles = []
next_start = time.time()
while time.time() < until:
    products(k)
    cycles.append([time.time(), k])
    next_start += period
    pause = next_start - time.time()
    if pause > 0:
        time.sleep(pause)
    else:
        next_start = time.time()
json.dump({"t_op": t_op, "cycles": cycles}, open(out, "w"))
PY

echo "== GPU"
nvidia-smi --query-gpu=index,uuid,name,utilization.gpu,memory.used --format=csv,noheader || true
t_op=$("$python" "$tmp/worker.py" calibrate)
echo "one ${MATMUL_N}x${MATMUL_N} fp16 product alone: ${t_op} s"

# Executables named busy70/busy30 (links to the real interpreter; its search path passed on, for a venv).
real=$("$python" -c 'import os, sys; print(os.path.realpath(sys.executable))')
path=$("$python" -c 'import sys; print(":".join(p for p in sys.path if p))')
ln -s "$real" "$tmp/busy70"
ln -s "$real" "$tmp/busy30"

# Whole windows: the workers start, then run from the next window boundary for RUN_S (rounded up to windows).
now=$(date +%s)
first=$(( (now / INTERVAL_S + 1) * INTERVAL_S ))
windows=$(( (RUN_S + INTERVAL_S - 1) / INTERVAL_S ))
last=$(( first + windows * INTERVAL_S ))
until=$(( last + 2 ))
echo "== two processes on GPU 0 ($SHARE_A and $SHARE_B of the time), windows $first..$last"
CUDA_VISIBLE_DEVICES=0 PYTHONPATH="$path" "$tmp/busy70" "$tmp/worker.py" run "$SHARE_A" "$t_op" "$until" "$tmp/busy70.json" &
pids+=($!)
CUDA_VISIBLE_DEVICES=0 PYTHONPATH="$path" "$tmp/busy30" "$tmp/worker.py" run "$SHARE_B" "$t_op" "$until" "$tmp/busy30.json" &
pids+=($!)
sleep 3
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader || true

echo "== eai-gpu sampler --nvml --dry-run --interval ${INTERVAL_S}s until $((last + 3))"
RUST_LOG=eai_sampler=debug timeout $(( last + 5 - $(date +%s) )) \
  "$bin" sampler --nvml --node "$(hostname)" --dry-run --interval "${INTERVAL_S}s" \
  > "$tmp/samples.jsonl" 2> "$tmp/sampler.log" || true
for p in "${pids[@]}"; do wait "$p"; done
pids=()
grep -E "measured use|process samples|nvmlDeviceGetProcessUtilization" "$tmp/sampler.log" | tail -20 || true

"$python" - "$tmp" "$first" "$last" "$INTERVAL_S" "$TOLERANCE" "$SHARE_A" "$SHARE_B" <<'PY'
import datetime, json, sys
tmp, first, last, step, tol = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
target = {"busy70": float(sys.argv[6]), "busy30": float(sys.argv[7])}
did = {n: json.load(open(f"{tmp}/{n}.json")) for n in target}
def done(name, s, e):
    w = did[name]
    return sum(k for t, k in w["cycles"] if s <= t < e) * w["t_op"] / (e - s)
measured = {}
for line in open(f"{tmp}/samples.jsonl"):
    line = line.strip()
    if not line.startswith("{"):
        continue
    for s in json.loads(line).get("samples", []):
        if s["pod"] in target:
            end = int(datetime.datetime.fromisoformat(s["timestamp"].replace("Z", "+00:00")).timestamp())
            measured[(end, s["pod"])] = (float(s.get("gpu_fraction") or 1), s.get("share_method") or "exclusive")
bad = 0
print(f"{'window end':>12} {'process':>8} {'measured':>9} {'did':>6} {'target':>6}  method")
for end in range(first + step, last + 1, step):
    for name in target:
        d = done(name, end - step, end)
        m = measured.get((end, name))
        if m is None:
            print(f"{end:>12} {name:>8} {'-':>9} {d:6.3f} {target[name]:6.2f}  (no sample)")
            bad += 1
            continue
        off = abs(m[0] - d) > tol or m[1] != "measured"
        bad += off
        print(f"{end:>12} {name:>8} {m[0]:9.3f} {d:6.3f} {target[name]:6.2f}  {m[1]}{'  <- off' if off else ''}")
if not measured:
    print("no sample named busy70 or busy30: how does NVML name the processes? (nvidia-smi above)")
    sys.exit(1)
if bad:
    print(f"FAILED: {bad} shares more than {tol} off what the processes did (or missing)")
    sys.exit(1)
print(f"ok: every measured share within {tol} of what its process did")
PY
