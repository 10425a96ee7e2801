/**
 * Slurm's accounting beside what was measured (`finops.gpu.slurmReconciliation`) against a real server of this
 * file's own, with a real `sacct --json` capture (test/fixtures/sacct.json, Slurm 22.05): job 1 (account physics)
 * held 2 GPUs and job 2 (account bio) 1 GPU, both for the 20 s from `time.start` to `time.end`. The samplers' pods
 * `job-1` and `job-2` measured them busy 90 % and 2 %: job 1 is `ok`, job 2 `idle`, and the idle cost is job 2's.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  EnterpriseAI,
  PermissionDeniedError,
  ValidationError,
  totalCost,
  type GpuSample,
  type SacctDocument,
  type SlurmJobLine,
  type SlurmJobStatus,
  type SlurmReconciliation,
} from "@enterprise-ai/sdk";
import { countingFetch } from "./helpers/proxy.js";
import { PKG_ROOT } from "./helpers/paths.js";
import { startServer, type TestServer } from "./helpers/server.js";

const HOUR = 3_600_000;
const SACCT_TEXT = readFileSync(join(PKG_ROOT, "test/fixtures/sacct.json"), "utf8");
const sacct = JSON.parse(SACCT_TEXT) as SacctDocument & { jobs: { time: { start: number } }[] };

let server: TestServer;
let admin: EnterpriseAI;
let from: Date;
let to: Date;

/** 5 s windows ending 5, 10, 15 and 20 s after the jobs started: GPU-0 and GPU-1 of job 1, GPU-2 of job 2. */
function jobSamples(started: Date): GpuSample[] {
  const out: GpuSample[] = [];
  for (let k = 1; k <= 4; k++) {
    const timestamp = new Date(started.getTime() + 5_000 * k).toISOString();
    for (const [gpu, job, account, utilization] of [
      ["GPU-0", 1, "physics", 0.9],
      ["GPU-1", 1, "physics", 0.9],
      ["GPU-2", 2, "bio", 0.02],
    ] as const) {
      out.push({
        node: "slurm-node-1",
        gpu_uuid: gpu,
        model: "H100-80GB",
        namespace: account,
        pod: `job-${job}`,
        deployment_id: "slurm/gpu",
        window_seconds: 5,
        utilization,
        memory_used_gb: 10,
        power_w: 300,
        timestamp,
      });
    }
  }
  return out;
}

before(async () => {
  server = await startServer();
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  const started = new Date(sacct.jobs[0]!.time.start * 1000);
  from = new Date(Math.floor(started.getTime() / HOUR) * HOUR);
  to = new Date(from.getTime() + HOUR);
  await admin.finops.allocationPolicies.create({
    name: "slurm-flat",
    deployment_pattern: "slurm/*",
    currency: "EUR",
    gpu_hourly_cost: "2.10",
    overhead_pct: "18",
    effective_from: "2020-01-01",
  });
  const r = await admin.finops.gpu.ingestSamples({ samples: jobSamples(started) });
  assert.equal(r.accepted, 12);
});
after(async () => {
  await server?.stop();
});

function check(r: SlurmReconciliation): void {
  assert.deepEqual([r.from, r.to].map(Date.parse), [from.getTime(), to.getTime()]);
  assert.equal(r.idle_below, "0.1");
  assert.deepEqual([r.allocated_gpu_seconds, r.measured_gpu_seconds], [60, 60]);
  assert.deepEqual(r.jobs.map((j) => j.job_id), ["1", "2"]);
  const [one, two] = r.jobs as [SlurmJobLine, SlurmJobLine];
  assert.deepEqual(
    [one.account, one.user, one.partition, one.state, one.deployment_id, one.gpus, one.status],
    ["physics", "root", "gpu", "COMPLETED", "slurm/gpu", 2, "ok"],
  );
  assert.deepEqual([one.allocated_gpu_seconds, one.measured_gpu_seconds, one.busy_gpu_seconds, one.busy_share], [40, 40, 36, 0.9]);
  assert.deepEqual([two.account, two.gpus, two.status], ["bio", 1, "idle"]);
  assert.deepEqual([two.allocated_gpu_seconds, two.measured_gpu_seconds, two.busy_share], [20, 20, 0.02]);
  assert.equal(one.tenant_id, null, "no [[slurm_account]] rule: shared");
  // Both priced (decimal strings); the idle cost is the idle job's.
  for (const j of r.jobs) {
    assert.equal(j.cost.length, 1);
    assert.equal(j.cost[0]!.currency, "EUR");
    assert.match(j.cost[0]!.amount, /^[0-9]+\.[0-9]{2}$/);
  }
  assert.deepEqual(r.idle_cost, two.cost);
  assert.deepEqual(totalCost(r.jobs.filter((j) => j.status === "idle")), r.idle_cost);
}

describe("finops.gpu.slurmReconciliation", () => {
  test("a busy job is ok, an idle one idle, and the idle cost is the idle job's", async () => {
    check(await admin.finops.gpu.slurmReconciliation({ sacct, from, to }));
  });

  test("the document's text is sent as it is; the object as JSON; the period and idle_below in the query", async () => {
    const counting = countingFetch();
    const client = admin.withOptions({ fetch: counting.fetch });
    const byText = await client.finops.gpu.slurmReconciliation({ sacct: SACCT_TEXT, from, to });
    check(byText);
    assert.equal(counting.calls[0]!.body, SACCT_TEXT);
    assert.equal(counting.calls[0]!.method, "POST");
    const url = new URL(counting.calls[0]!.url);
    assert.equal(url.pathname, "/v1/finops/gpu/slurm/reconciliation");
    assert.deepEqual([url.searchParams.get("from"), url.searchParams.get("to")], [from.toISOString(), to.toISOString()]);
    assert.equal(url.searchParams.has("idle_below"), false);
    assert.deepEqual(await client.finops.gpu.slurmReconciliation({ sacct, from, to }), byText);
    assert.deepEqual(JSON.parse(counting.calls[1]!.body!), sacct);
    // A typed document, written out: Slurm 23's { set, number } job ids and states as lists pass too.
    const typed: SacctDocument = {
      meta: { plugin: { type: "openapi/dbv0.0.38" } },
      jobs: [{ job_id: { set: true, number: 1 }, account: "physics", state: { current: ["COMPLETED"] }, tres: { allocated: [] } }],
    };
    await client.finops.gpu.slurmReconciliation({ sacct: typed, from: "2026-12-05", to: "2026-12-05", idleBelow: 0.25 });
    assert.equal(new URL(counting.calls[2]!.url).searchParams.get("idle_below"), "0.25");
  });

  test("idleBelow moves the threshold", async () => {
    const low = await admin.finops.gpu.slurmReconciliation({ sacct, from, to, idleBelow: "0.01" });
    assert.equal(low.idle_below, "0.01");
    assert.deepEqual(low.jobs.map((j) => j.status), ["ok", "ok"] satisfies SlurmJobStatus[]);
    assert.deepEqual(low.idle_cost, []);
    const high = await admin.finops.gpu.slurmReconciliation({ sacct, from, to, idleBelow: 0.95 });
    assert.deepEqual(high.jobs.map((j) => j.status), ["idle", "idle"]);
    assert.deepEqual(high.idle_cost, totalCost(high.jobs));
  });

  test("an idleBelow out of range is a ValidationError naming idle_below", async () => {
    await assert.rejects(admin.finops.gpu.slurmReconciliation({ sacct, from, to, idleBelow: "2" }), (e: unknown) => {
      assert.ok(e instanceof ValidationError);
      assert.equal(e.status, 422);
      assert.deepEqual(e.fields, ["idle_below"]);
      return true;
    });
  });

  test("a document without jobs is a ValidationError naming body; a non-document a TypeError", async () => {
    for (const bad of [{ meta: {} } as unknown as SacctDocument, "not json"]) {
      await assert.rejects(admin.finops.gpu.slurmReconciliation({ sacct: bad, from, to }), (e: unknown) => {
        assert.ok(e instanceof ValidationError);
        assert.deepEqual(e.fields, ["body"]);
        return true;
      });
    }
    await assert.rejects(admin.finops.gpu.slurmReconciliation({ sacct: [] as unknown as SacctDocument, from, to }), TypeError);
  });

  test("a job outside the period is left out", async () => {
    const r = await admin.finops.gpu.slurmReconciliation({ sacct, from: new Date(from.getTime() - HOUR), to: from });
    assert.deepEqual([r.jobs, r.allocated_gpu_seconds, r.idle_cost], [[], 0, []]);
  });

  test("a tenant's key sees the jobs of its dedicated deployments only; a sampler none", async () => {
    const acme = await admin.tenants.create({ slug: "slurm-acme", name: "Acme" });
    const viewer = await admin.auth.apiKeys.create({ role: "viewer", tenant_id: acme.id });
    const mine = await new EnterpriseAI({ baseUrl: server.url, apiKey: viewer.key }).finops.gpu.slurmReconciliation({ sacct, from, to });
    assert.deepEqual([mine.jobs, mine.idle_cost], [[], []], "both jobs ran on shared GPUs");
    const sampler = await admin.auth.apiKeys.create({ role: "sampler" });
    await assert.rejects(
      new EnterpriseAI({ baseUrl: server.url, apiKey: sampler.key, maxRetries: 0 }).finops.gpu.slurmReconciliation({ sacct, from, to }),
      PermissionDeniedError,
    );
  });
});
