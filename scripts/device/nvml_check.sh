#!/usr/bin/env bash
# Device check of the sampler's NVML source, on a machine with an NVIDIA GPU and its driver (one command):
#   scripts/device/nvml_check.sh
# 1. builds eai-gpu with --features nvml (libnvidia-ml is loaded at run time);
# 2. one tick, printed instead of sent: `eai-gpu sampler --nvml --once --dry-run` (no control plane needed);
# 3. checks the JSON: one sample per GPU that nvidia-smi lists (MIG instances: see the note it prints), every
#    value in range, power close to nvidia-smi's;
# 4. two windows of 2 s, so that the second one's power comes from the energy counter;
# 5. a missing library fails at start with a clear error (exit 2), never a crash.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v cargo >/dev/null || { echo "cargo is needed (rustup.rs) to build eai-gpu here" >&2; exit 1; }

echo "== GPUs (nvidia-smi)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi -L
  nvidia-smi --query-gpu=uuid,name,utilization.gpu,memory.used,power.draw --format=csv,noheader,nounits
else
  echo "nvidia-smi not found: the checks against it are skipped"
fi

echo "== build (--features nvml)"
cargo build -p eai-gpu --features nvml
bin="${CARGO_TARGET_DIR:-target}/debug/eai-gpu"
node=$(hostname)
out=$(mktemp)
trap 'rm -f "$out" "$out.2"' EXIT

echo "== one tick: eai-gpu sampler --nvml --once --dry-run"
RUST_LOG=info "$bin" sampler --nvml --node "$node" --once --dry-run > "$out"
cat "$out"

echo "== two windows of 2 s (the second one's power from nvmlDeviceGetTotalEnergyConsumption)"
RUST_LOG=warn timeout 7 "$bin" sampler --nvml --node "$node" --dry-run --interval 2s > "$out.2" || true
cat "$out.2"

if command -v python3 >/dev/null; then
  python3 - "$out" "$out.2" <<'PY'
import json, shutil, subprocess, sys
samples = json.load(open(sys.argv[1]))["samples"]
assert samples, "no sample: NVML saw no GPU, or every GPU lacked utilization or power"
for s in samples:
    u, m, p = float(s["utilization"]), float(s["memory_used_gb"]), float(s["power_w"])
    assert 0 <= u <= 1, s
    assert 0 <= m <= 1024, s
    assert 0 < p < 2000, s
    assert s["window_seconds"] == "15" and s["timestamp"].endswith("Z"), s
print(f"ok: {len(samples)} samples, every value in range")
if shutil.which("nvidia-smi"):
    rows = subprocess.run(["nvidia-smi", "--query-gpu=uuid,power.draw", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, check=True).stdout.strip().splitlines()
    smi = {r.split(",")[0].strip(): float(r.split(",")[1]) for r in rows if "[N/A]" not in r}
    whole = {s["gpu_uuid"]: s for s in samples if "/mig-" not in s["gpu_uuid"]}
    missing = set(smi) - {s["gpu_uuid"].split("/")[0] for s in samples}
    assert not missing, f"GPUs nvidia-smi lists but the sampler did not report: {missing}"
    for uuid, w in smi.items():
        if uuid in whole:
            got = float(whole[uuid]["power_w"])
            assert abs(got - w) <= max(0.5 * w, 30), f"{uuid}: sampler {got} W, nvidia-smi {w} W"
    print(f"ok: the sampler's GPUs and power agree with nvidia-smi ({len(smi)} GPUs)")
    if any("/mig-" in s["gpu_uuid"] for s in samples) or len(whole) < len(smi):
        print("note: MIG GPUs: NVML gives no per-instance utilization, so instances are skipped (counted); use DCGM for MIG")
lines = [l for l in open(sys.argv[2]) if l.strip()]
assert len(lines) >= 2, f"expected two windows, got {len(lines)}"
print(f"ok: {len(lines)} windows of 2 s")
PY
fi

echo "== a missing library: a clear error at start"
set +e
msg=$("$bin" sampler --nvml --nvml-library /nonexistent/libnvidia-ml.so.1 --node "$node" --once --dry-run 2>&1)
code=$?
set -e
echo "$msg"
[ "$code" -eq 2 ] && grep -q "cannot load" <<<"$msg" || { echo "expected exit 2 and 'cannot load', got $code" >&2; exit 1; }
echo "ok: NVML device check passed"
