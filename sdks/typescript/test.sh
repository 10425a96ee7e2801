#!/usr/bin/env bash
# The TypeScript SDK's full check, runnable from anywhere:
#   npm ci, check:generated, typecheck, build, the tests against a real `eai-gpu serve`, then the README's Install
#   (npm ci, npm pack) run as written in a clean copy of the clone, an install of that tarball into a scratch
#   project that imports it as ESM and as CommonJS (and type-checks both), and the README's Quick start run
#   there against a real server.
# The server binary: EAI_GPU_BIN, else <repo>/target/debug/eai-gpu, else eai-gpu on PATH (the tests fail without one).
set -euo pipefail

started=$(date +%s)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

scratch="$(mktemp -d "${TMPDIR:-/tmp}/eai-sdk-pack.XXXXXX")"
finish() {
  rc=$?
  rm -rf "$scratch"
  elapsed=$(( $(date +%s) - started ))
  if [ "$rc" -eq 0 ]; then
    echo "sdks/typescript/test.sh: PASSED in ${elapsed}s"
  else
    echo "sdks/typescript/test.sh: FAILED (exit $rc) after ${elapsed}s" >&2
  fi
  exit "$rc"
}
trap finish EXIT

step() { echo; echo "== $* ($(( $(date +%s) - started ))s)"; }

step "node $(node --version), npm $(npm --version)"
node -e 'const [maj] = process.versions.node.split(".").map(Number); if (maj < 20) { console.error("Node >= 20 is required"); process.exit(1); }'

# The suite runs contracts/v1/sdk/behaviour.json through scripts/sdk/fault_proxy.py (standard-library Python 3).
command -v python3 >/dev/null || { echo "python3 is required: the behaviour cases run through scripts/sdk/fault_proxy.py" >&2; exit 1; }

step "npm ci"
npm ci --no-audit --no-fund

step "npm run check:generated"
npm run check:generated

step "npm run typecheck"
npm run typecheck

step "npm run build"
npm run build

step "npm test"
npm test

step "the README's Install, run as written from the root of a clean clone: npm ci, npm pack"
# A clean clone holds the files git tracks or would add (not node_modules/, dist/, build-test/, *.tgz): copy
# those of sdks/typescript, then run the commands of the README's first code block (under "## Install").
clone="$scratch/clone"
mkdir -p "$clone"
if root="$(git -C "$here" rev-parse --show-toplevel 2>/dev/null)"; then
  (cd "$root" && git ls-files -z --cached --others --exclude-standard -- sdks/typescript \
     | while IFS= read -r -d '' f; do if [ -f "$f" ]; then printf '%s\0' "$f"; fi; done \
     | tar --null -T - -cf -) | tar -C "$clone" -xf -
else
  mkdir -p "$clone/sdks"
  cp -R "$here" "$clone/sdks/typescript"
  rm -rf "$clone/sdks/typescript/node_modules" "$clone/sdks/typescript/dist" "$clone/sdks/typescript/build-test" "$clone"/sdks/typescript/*.tgz
fi
if [ -e "$clone/sdks/typescript/node_modules" ] || [ -e "$clone/sdks/typescript/dist" ] || [ ! -f "$clone/sdks/typescript/package.json" ]; then
  echo "the clean copy of sdks/typescript is not one" >&2; exit 1
fi
install_cmds="$(awk '/^## Install/{s=1} s && /^```/{if (b) exit; b=1; next} b' "$here/README.md")"
printf 'README'"'"'s Install:\n%s\n' "$install_cmds"
case "$install_cmds" in *"npm pack"*) ;; *) echo "no npm pack under ## Install in README.md" >&2; exit 1 ;; esac
(cd "$clone" && bash -euo pipefail -c "$install_cmds" >"$scratch/install.log" 2>&1) || { cat "$scratch/install.log"; exit 1; }
# The tarball the README then installs: /path/to/the/clone/sdks/typescript/enterprise-ai-sdk-0.1.0.tgz
tarball="$clone/sdks/typescript/enterprise-ai-sdk-0.1.0.tgz"
grep -q 'enterprise-ai-sdk-0.1.0.tgz' README.md
test -f "$tarball" || { echo "npm pack did not write $tarball" >&2; ls "$clone/sdks/typescript" >&2; exit 1; }
echo "packed: $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB)"
tar -tzf "$tarball" | sort > "$scratch/contents.txt"
grep -qx 'package/dist/esm/index.js' "$scratch/contents.txt"
grep -qx 'package/dist/esm/index.d.ts' "$scratch/contents.txt"
grep -qx 'package/dist/cjs/index.js' "$scratch/contents.txt"
grep -qx 'package/dist/cjs/index.d.ts' "$scratch/contents.txt"
grep -qx 'package/dist/cjs/package.json' "$scratch/contents.txt"
grep -qx 'package/README.md' "$scratch/contents.txt"
if grep -qE '^package/(src|test|node_modules|build-test)/' "$scratch/contents.txt"; then
  echo "the tarball carries sources or tests" >&2; exit 1
fi

consumer="$scratch/consumer"
mkdir -p "$consumer"
cd "$consumer"
echo '{ "name": "eai-sdk-consumer", "version": "1.0.0", "private": true }' > package.json
npm install --no-audit --no-fund "$tarball" >/dev/null  # the README's "Then, in your project: npm install ..."
node -e '
const pkg = require("@enterprise-ai/sdk/package.json");
if (pkg.dependencies && Object.keys(pkg.dependencies).length) { console.error("runtime dependencies:", pkg.dependencies); process.exit(1); }'

cat > esm.mjs <<'JS'
import assert from "node:assert/strict";
import EnterpriseAIDefault, { EnterpriseAI, NotFoundError, EnterpriseAIError, VERSION } from "@enterprise-ai/sdk";
assert.equal(VERSION, "0.1.0");
assert.equal(EnterpriseAIDefault, EnterpriseAI);
assert.ok(new NotFoundError({ code: "not_found", message: "x", status: 404 }) instanceof EnterpriseAIError);
const client = new EnterpriseAI({ baseUrl: "http://127.0.0.1:9", apiKey: "eai_live_smoke_test_key_0000000000", tenant: "acme" });
assert.equal(typeof client.finops.gpu.ingestSamples, "function");
assert.ok(!JSON.stringify(client).includes("smoke_test_key"));
assert.ok(import.meta.resolve("@enterprise-ai/sdk").endsWith("/dist/esm/index.js"));
console.log("ESM import OK:", VERSION);
JS
node esm.mjs

cat > cjs.cjs <<'JS'
const assert = require("node:assert/strict");
const sdk = require("@enterprise-ai/sdk");
assert.equal(sdk.VERSION, "0.1.0");
assert.equal(sdk.default, sdk.EnterpriseAI);
const client = new sdk.EnterpriseAI({ baseUrl: "http://127.0.0.1:9", apiKey: "eai_live_smoke_test_key_0000000000" });
assert.equal(typeof client.usage.emitter, "function");
assert.deepEqual(sdk.totalCost([{ cost: [{ amount: "0.10", currency: "EUR" }] }, { cost: [{ amount: "0.2", currency: "EUR" }] }]), [{ amount: "0.30", currency: "EUR" }]);
assert.ok(require.resolve("@enterprise-ai/sdk").endsWith(require("node:path").join("dist", "cjs", "index.js")));
console.log("CJS require OK:", sdk.VERSION);
JS
node cjs.cjs

# The published declarations type-check for an ESM and a CommonJS consumer (strict, node16 resolution).
cat > consumer.mts <<'TS'
import { EnterpriseAI, type Allocation, type AllocationSeries, type GpuSampleIngestResult, type GpuUsageBreakdown, type Money, type SlurmJobStatus, type SlurmReconciliation, type Statement, type StatementIssued, type TokenCostList, ValidationError, totalCost } from "@enterprise-ai/sdk";
const client = new EnterpriseAI({ baseUrl: "http://127.0.0.1:9", apiKey: "eai_live_x" });
export async function f(): Promise<string> {
  const r: GpuSampleIngestResult = await client.finops.gpu.ingestSamples({ samples: [] });
  const a: Allocation = await client.finops.gpu.allocation({ from: "2026-10-01", to: new Date() });
  const cost: string | undefined = a.deployments[0]?.cost;
  const t: TokenCostList = await client.finops.gpu.tokenCosts({ from: "2026-10-01", basis: "usage", aggregate: "tenant" });
  const perMtok: string | null | undefined = t.items[0]?.cost_per_mtok;
  const s: AllocationSeries = await client.finops.gpu.allocationSeries({ to: new Date(), step: "week" });
  if (perMtok === undefined || s.steps.length < 0) return "";
  const u: GpuUsageBreakdown = await client.finops.gpu.usage({ from: "2026-10-01", groupBy: ["node", "gpu"], filter: { pod: ["p-0", "p-1"] } });
  const pod: string | null | undefined = u.rows[0]?.group.pod;
  const total: Money[] = totalCost(u.rows);
  if (pod === undefined || total.length < 0) return "";
  const sr: SlurmReconciliation = await client.finops.gpu.slurmReconciliation({ sacct: { jobs: [{ job_id: 1 }] }, from: "2026-10-01", idleBelow: "0.1" });
  const status: SlurmJobStatus | undefined = sr.jobs[0]?.status;
  if (status === "not_in_slurm" || sr.idle_cost.length < 0) return "";
  const issued: StatementIssued = await client.finops.gpu.statements.issue({ period: "2026-10" }, { idempotencyKey: "close-2026-10" });
  const st: Statement = await client.finops.gpu.statements.get(issued.issued[0]?.number ?? "ST-2026-10-0001");
  const csvText: string = await client.finops.gpu.statements.getCsv(st.number);
  const v12: Uint8Array = await client.finops.gpu.allocationFocus({ from: "2026-10-01", version: "1.2", granularity: "hour" });
  if (st.adjusted_totals.length < 0 || csvText === "" || v12.length < 0) return "";
  try { await client.tenants.get("acme"); } catch (e) { if (e instanceof ValidationError) return e.fields.join(","); }
  return `${r.accepted} ${cost ?? ""}`;
}
TS
cat > consumer.cts <<'TS'
import sdk = require("@enterprise-ai/sdk");
const client = new sdk.EnterpriseAI({ baseUrl: "http://127.0.0.1:9", apiKey: "eai_live_x", tenant: "acme" });
export const whoami: Promise<sdk.WhoAmI> = client.auth.whoami();
TS
cat > tsconfig.json <<'JSON'
{
  "compilerOptions": {
    "strict": true, "noEmit": true, "module": "node16", "moduleResolution": "node16",
    "target": "es2022", "lib": ["es2022", "dom"], "types": [], "skipLibCheck": false
  },
  "files": ["consumer.mts", "consumer.cts"]
}
JSON
node "$here/node_modules/typescript/bin/tsc" -p tsconfig.json
echo "consumer type check OK (ESM and CJS declarations)"

step "the README's Quick start, in that project, against a real server"
cd "$here"
EAI_SDK_CONSUMER="$consumer" node --test build-test/test/readme.test.js
