/**
 * GPU time and cost per pod, node and GPU (`finops.gpu.usage`) against a real server of this file's own: a
 * deployment at 2.10 USD per GPU-hour plus 18 % overhead, GPU A in one pod on gpu-node-3 for the whole hour and
 * GPU B in another pod on gpu-node-4 for its first half (3.717 exact, 3.72 charged: 2.48 and 1.24); a dedicated
 * deployment of tenant T on gpu-node-9. The rows sum to the allocation's cost to the cent, filters keep the
 * same cents, a tenant sees its dedicated deployment's rows only, and a bad dimension is a `ValidationError`.
 * Two hours earlier, a GPU shared by two pods of another deployment, each share measured (0.75 on the GPU itself,
 * 0.25 on its share slice): each row's share of its GPU (`gpu_share`) and how it was obtained (`share`).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  EnterpriseAI,
  ValidationError,
  totalCost,
  type Allocation,
  type AllocationExplanation,
  type GpuSample,
  type GpuUsageDimension,
  type GpuUsageRow,
} from "@enterprise-ai/sdk";
import { hourOfSamples, hourStart, series, uniq } from "./helpers/data.js";
import { equal, sum } from "./helpers/money.js";
import { countingFetch } from "./helpers/proxy.js";
import { startServer, type TestServer } from "./helpers/server.js";

const HOUR = 3_600_000;

let server: TestServer;
let admin: EnterpriseAI;
const deployment = uniq("usage-shared");
const dedicated = uniq("usage-train");
const podA = `${deployment}-a`;
const podB = `${deployment}-b`;
const gpuA = uniq("GPU-usage-a");
const gpuB = uniq("GPU-usage-b");
const gpuT = uniq("GPU-usage-t");
// The GPU shared by two pods, in the hour two hours before the others (so that they keep their rows).
const sharedGpuDeployment = uniq("usage-gpu-shared");
const sharedGpu = uniq("GPU-usage-s");
const sharedPodA = `${sharedGpuDeployment}-a`;
const sharedPodB = `${sharedGpuDeployment}-b`;
let tenantT: string;
let tenantU: string;
let from: Date;
let to: Date;
let sharedFrom: Date;
let sharedTo: Date;
let allocation: Allocation;

const placed = (samples: GpuSample[], pod: string, node: string): GpuSample[] =>
  samples.map((s) => ({ ...s, pod, node }));
const measured = (samples: GpuSample[], pod: string, fraction: number): GpuSample[] =>
  samples.map((s) => ({ ...s, pod, node: "gpu-node-5", gpu_fraction: fraction, share_method: "measured" }));

/** The allocation's cost of a deployment (one currency here). */
function deploymentCost(id: string): string {
  const d = allocation.deployments.find((x) => x.deployment_id === id);
  assert.ok(d, `${id} in the allocation`);
  assert.equal(d.currency, "USD");
  return d.cost;
}

/** Each row as `[group values..., gpu_seconds, amount]`. */
const table = (rows: GpuUsageRow[], dims: GpuUsageDimension[]) =>
  rows.map((r) => [...dims.map((d) => r.group[d]), r.gpu_seconds, r.cost.map((c) => `${c.amount} ${c.currency}`).join()]);

before(async () => {
  server = await startServer();
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  from = hourStart(3);
  to = new Date(from.getTime() + HOUR);
  await admin.finops.allocationPolicies.create({
    name: "usage-flat",
    deployment_pattern: "usage-*",
    currency: "USD",
    gpu_hourly_cost: "2.10",
    overhead_pct: "18",
    effective_from: "2020-01-01",
  });
  tenantT = (await admin.tenants.create({ slug: uniq("usage-t"), name: "Usage T" })).id;
  tenantU = (await admin.tenants.create({ slug: uniq("usage-u"), name: "Usage U" })).id;
  await admin.finops.gpu.ingestSamples({
    samples: [
      ...placed(hourOfSamples(gpuA, deployment, from), podA, "gpu-node-3"),
      ...placed(series(gpuB, deployment, new Date(from.getTime() + HOUR / 2), 120), podB, "gpu-node-4"),
      ...placed(hourOfSamples(gpuT, dedicated, from, tenantT), `${dedicated}-0`, "gpu-node-9"),
    ],
  });
  sharedFrom = hourStart(5);
  sharedTo = new Date(sharedFrom.getTime() + HOUR);
  await admin.finops.gpu.ingestSamples({
    samples: [
      ...measured(hourOfSamples(sharedGpu, sharedGpuDeployment, sharedFrom), sharedPodA, 0.75),
      ...measured(
        hourOfSamples(`${sharedGpu}/shared/eai-inference/${sharedPodB}`, sharedGpuDeployment, sharedFrom),
        sharedPodB,
        0.25,
      ),
    ],
  });
  allocation = await admin.finops.gpu.allocation({ from, to });
});
after(async () => {
  await server?.stop();
});

describe("finops.gpu.usage", () => {
  test("by pod: each pod's GPU-seconds and cents, summing to the allocation's cost of the deployment", async () => {
    const u = await admin.finops.gpu.usage({ from, to, groupBy: ["pod"], filter: { deployment } });
    assert.deepEqual([u.from, u.to].map(Date.parse), [from.getTime(), to.getTime()]);
    assert.deepEqual(u.group_by, ["pod"]);
    assert.deepEqual(table(u.rows, ["pod"]), [
      [podA, 3600, "2.48 USD"],
      [podB, 1800, "1.24 USD"],
    ]);
    const [a, b] = u.rows;
    assert.ok(a && b);
    assert.deepEqual([a.samples, a.estimated_samples, a.busy_gpu_seconds, a.unpriced_gpu_seconds], [240, 0, 2952, 0]);
    assert.deepEqual([b.samples, b.busy_gpu_seconds], [120, 1476]);
    assert.equal(deploymentCost(deployment), "3.72");
    assert.ok(equal(sum(u.rows.flatMap((r) => r.cost.map((c) => c.amount))), deploymentCost(deployment)));
    assert.deepEqual(totalCost(u.rows), [{ amount: "3.72", currency: "USD" }]);

    // The default: one row per deployment, each the allocation's cost of it.
    const byDeployment = await admin.finops.gpu.usage({ from, to });
    assert.deepEqual(byDeployment.group_by, ["deployment"]);
    assert.deepEqual(
      byDeployment.rows.map((r) => [r.group.deployment, totalCost([r])]),
      [deployment, dedicated].sort().map((d) => [d, [{ amount: deploymentCost(d), currency: "USD" }]]),
    );
  });

  test("a filter keeps the same cents; it is sent as filter=dim:value pairs and group_by comma-separated", async () => {
    const counting = countingFetch();
    const client = admin.withOptions({ fetch: counting.fetch });
    const all = await client.finops.gpu.usage({ from, to, groupBy: ["deployment", "pod"] });
    const both = await client.finops.gpu.usage({ from, to, groupBy: ["deployment", "pod"], filter: { pod: [podA, podB] } });
    const onlyB = await client.finops.gpu.usage({ from, to, groupBy: ["deployment", "pod"], filter: { deployment, pod: podB } });
    const dims: GpuUsageDimension[] = ["deployment", "pod"];
    assert.deepEqual(
      table(both.rows, dims),
      table(all.rows, dims).filter(([dep]) => dep === deployment),
    );
    assert.deepEqual(table(onlyB.rows, dims), [[deployment, podB, 1800, "1.24 USD"]]);
    const sent = counting.calls.map((c) => new URL(c.url).searchParams);
    assert.deepEqual(
      sent.map((q) => [q.get("group_by"), q.get("filter")]),
      [
        ["deployment,pod", null],
        ["deployment,pod", `pod:${podA},pod:${podB}`],
        ["deployment,pod", `deployment:${deployment},pod:${podB}`],
      ],
    );
  });

  test("by node and GPU: every deployment's GPUs, summing to the allocation", async () => {
    const u = await admin.finops.gpu.usage({ from, to, groupBy: ["node", "gpu"] });
    assert.deepEqual(u.group_by, ["node", "gpu"]);
    assert.deepEqual(
      u.rows.map((r) => r.group),
      [
        { node: "gpu-node-3", gpu: gpuA },
        { node: "gpu-node-4", gpu: gpuB },
        { node: "gpu-node-9", gpu: gpuT },
      ],
    );
    assert.deepEqual(
      u.rows.map((r) => r.gpu_seconds),
      [3600, 1800, 3600],
    );
    assert.deepEqual(totalCost(u.rows), [
      { amount: sum([deploymentCost(deployment), deploymentCost(dedicated)]), currency: "USD" },
    ]);
  });

  test("grouped by gpu, each row has its share of the GPU (1: a GPU of its own); grouped by share, how it was obtained", async () => {
    const dims: GpuUsageDimension[] = ["pod", "gpu", "share"];
    const u = await admin.finops.gpu.usage({ from, to, groupBy: dims });
    assert.deepEqual(u.group_by, dims);
    assert.deepEqual(
      u.rows.map((r) => [r.group.pod, r.group.gpu, r.group.share, r.gpu_share]),
      [
        [podA, gpuA, "exclusive", 1], // usage-shared-… sorts before usage-train-…
        [podB, gpuB, "exclusive", 1],
        [`${dedicated}-0`, gpuT, "exclusive", 1],
      ],
    );
    // Not grouped by gpu: no share of a GPU.
    const byShare = await admin.finops.gpu.usage({ from, to, groupBy: ["share"] });
    assert.deepEqual(
      byShare.rows.map((r) => [r.group, r.gpu_seconds, "gpu_share" in r]),
      [[{ share: "exclusive" }, 9000, false]],
    );
    // A tenant's key is not told how much of a GPU the others used.
    const keyT = (await admin.auth.apiKeys.create({ role: "viewer", tenant_id: tenantT })).key;
    const t = new EnterpriseAI({ baseUrl: server.url, apiKey: keyT, maxRetries: 0 });
    const mine = await t.finops.gpu.usage({ from, to, groupBy: ["pod", "gpu"] });
    assert.deepEqual(
      mine.rows.map((r) => [r.group, r.gpu_share]),
      [[{ pod: `${dedicated}-0`, gpu: gpuT }, undefined]],
    );
  });

  test("a GPU shared by two pods is one GPU, each pod with its measured share; the explanation's pods are those rows", async () => {
    const range = { from: sharedFrom, to: sharedTo };
    const u = await admin.finops.gpu.usage({
      ...range,
      groupBy: ["pod", "gpu", "share"],
      filter: { deployment: sharedGpuDeployment },
    });
    const rows: GpuUsageRow[] = u.rows;
    assert.deepEqual(
      rows.map((r) => [r.group, r.gpu_seconds, r.gpu_share]),
      [
        [{ pod: sharedPodA, gpu: sharedGpu, share: "measured" }, 2700, 0.75],
        [{ pod: sharedPodB, gpu: sharedGpu, share: "measured" }, 900, 0.25],
      ],
    );
    const byGpu = await admin.finops.gpu.usage({ ...range, groupBy: ["gpu"], filter: { deployment: sharedGpuDeployment } });
    assert.deepEqual(
      byGpu.rows.map((r) => [r.group, r.gpu_seconds, r.gpu_share]),
      [[{ gpu: sharedGpu }, 3600, 1]],
    );
    const e: AllocationExplanation = await admin.finops.gpu.explain({ deploymentId: sharedGpuDeployment, ...range });
    assert.deepEqual(
      e.pods.map((r) => [r.group, r.gpu_share, r.cost]),
      [
        [{ namespace: "eai-inference", pod: sharedPodA, gpu: sharedGpu, share: "measured" }, 0.75, rows[0]?.cost],
        [{ namespace: "eai-inference", pod: sharedPodB, gpu: sharedGpu, share: "measured" }, 0.25, rows[1]?.cost],
      ],
    );
  });

  test("a tenant's key sees the rows of its dedicated deployments only", async () => {
    const keyT = (await admin.auth.apiKeys.create({ role: "viewer", tenant_id: tenantT })).key;
    const t = new EnterpriseAI({ baseUrl: server.url, apiKey: keyT, maxRetries: 0 });
    const u = await t.finops.gpu.usage({ from, to, groupBy: ["deployment", "pod", "tenant"] });
    assert.deepEqual(
      u.rows.map((r) => r.group),
      [{ deployment: dedicated, pod: `${dedicated}-0`, tenant: tenantT }],
    );
    assert.deepEqual(totalCost(u.rows), [{ amount: deploymentCost(dedicated), currency: "USD" }]);
    assert.ok(!JSON.stringify(u).includes(deployment));
    const keyU = (await admin.auth.apiKeys.create({ role: "viewer", tenant_id: tenantU })).key;
    const other = new EnterpriseAI({ baseUrl: server.url, apiKey: keyU, maxRetries: 0 });
    assert.deepEqual((await other.finops.gpu.usage({ from, to, groupBy: ["pod"] })).rows, []);
  });

  test("a bad dimension is a ValidationError naming group_by (or filter); a filter the query cannot carry, a TypeError", async () => {
    await assert.rejects(
      admin.finops.gpu.usage({ from, to, groupBy: ["pod", "rack" as GpuUsageDimension] }),
      (e: unknown) => e instanceof ValidationError && e.status === 422 && e.fields.join() === "group_by",
    );
    await assert.rejects(
      admin.finops.gpu.usage({ from, to, filter: { rack: "r1" } as Record<string, string> }),
      (e: unknown) => e instanceof ValidationError && e.fields.join() === "filter",
    );
    const counting = countingFetch();
    const client = admin.withOptions({ fetch: counting.fetch });
    await assert.rejects(client.finops.gpu.usage({ from, to, filter: { pod: [] } }), TypeError);
    await assert.rejects(client.finops.gpu.usage({ from, to, filter: { pod: "a,b" } }), TypeError);
    assert.equal(counting.calls.length, 0);
  });

  test("totalCost sums decimal strings exactly, per currency", () => {
    const rows = [
      { cost: [{ amount: "0.1", currency: "USD" }, { amount: "1.005", currency: "EUR" }] },
      { cost: [] },
      { cost: [{ amount: "0.20", currency: "USD" }, { amount: "-0.005", currency: "EUR" }] },
      { cost: [{ amount: "9007199254740993.01", currency: "USD" }] },
    ];
    assert.deepEqual(totalCost(rows), [
      { amount: "1.000", currency: "EUR" },
      { amount: "9007199254740993.31", currency: "USD" },
    ]);
    assert.deepEqual(totalCost([]), []);
    assert.throws(() => totalCost([{ cost: [{ amount: "1e3", currency: "USD" }] }]), RangeError);
  });
});
