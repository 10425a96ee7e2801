/**
 * Why a deployment costs what it does (`finops.gpu.explain`) against a real server of this file's own: a shared
 * deployment at 10 USD per GPU-hour for an hour, tenant A 700 tokens and tenant B 300 (70/30). The explanation's
 * lines, its rounded lines equal to the allocation's items, where its time ran (its pods), and the reader's scope.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  EnterpriseAI,
  NotFoundError,
  PermissionDeniedError,
  type GpuUsageRow,
  type UsageEventInput,
} from "@enterprise-ai/sdk";
import { hourOfSamples, hourStart, uniq } from "./helpers/data.js";
import { startServer, type TestServer } from "./helpers/server.js";

const HOUR = 3_600_000;

let server: TestServer;
let admin: EnterpriseAI;
const deployment = uniq("explain-shared");
let tenantA: string;
let tenantB: string;
let tenantC: string;
let from: Date;
let to: Date;

before(async () => {
  server = await startServer();
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  from = hourStart(4);
  to = new Date(from.getTime() + HOUR);
  await admin.finops.allocationPolicies.create({
    name: "flat",
    deployment_pattern: "explain-*",
    currency: "USD",
    gpu_hourly_cost: 10,
    effective_from: "2020-01-01",
  });
  await admin.finops.gpu.ingestSamples({ samples: hourOfSamples("GPU-explain-1", deployment, from) });
  tenantA = (await admin.tenants.create({ slug: uniq("explain-a"), name: "Explain A" })).id;
  tenantB = (await admin.tenants.create({ slug: uniq("explain-b"), name: "Explain B" })).id;
  tenantC = (await admin.tenants.create({ slug: uniq("explain-c"), name: "Explain C" })).id;
  const at = new Date(from.getTime() + 600_000);
  const event = (tenant: string, tokens: number): UsageEventInput => ({
    usage_type: "llm_tokens",
    source: "gateway",
    occurred_at: at,
    deployment_id: deployment,
    tenant_id: tenant,
    units: { tokens_in: tokens },
  });
  await admin.usage.events({ events: [event(tenantA, 700), event(tenantB, 300)] });
});
after(async () => {
  await server?.stop();
});

describe("finops.gpu.explain", () => {
  test("each bucket's claims and split, and a rounding whose lines are the allocation's items", async () => {
    const e = await admin.finops.gpu.explain({ deploymentId: deployment, from, to });
    assert.equal(e.deployment_id, deployment);
    assert.equal(e.bucket_seconds, 3600);
    const [b] = e.buckets;
    assert.ok(b);
    assert.equal(b.gpu_seconds, 3600);
    const shares = Object.fromEntries(b.claims.map((c) => [c.party.tenant_id, c.share]));
    assert.deepEqual(shares, { [tenantA]: 0.7, [tenantB]: 0.3 });
    assert.equal(b.priced[0]?.cost, "10");
    const [r] = e.rounding;
    assert.ok(r);
    assert.deepEqual([r.currency, r.exact, r.cost], ["USD", "10", "10.00"]);
    const lines = r.lines;
    const allocation = await admin.finops.gpu.allocation({ from, to });
    for (const item of allocation.items) {
      const line = lines.find((l) => l.party.tenant_id === item.tenant_id);
      assert.equal(line?.amount, item.allocated.amount);
    }
    const amounts = Object.fromEntries(lines.map((l) => [l.party.tenant_id ?? l.party.kind, l.amount]));
    assert.deepEqual(amounts, { [tenantA]: "7.00", [tenantB]: "3.00", unallocated: "0.00" });
  });

  test("its pods: where the deployment's time ran, by namespace, pod, GPU and share, as the breakdown answers it", async () => {
    const e = await admin.finops.gpu.explain({ deploymentId: deployment, from, to });
    const pods: GpuUsageRow[] = e.pods;
    assert.deepEqual(
      pods.map((p) => [p.group, p.samples, p.gpu_seconds, p.gpu_share, p.cost]),
      [
        [
          { namespace: "eai-inference", pod: `${deployment}-0`, gpu: "GPU-explain-1", share: "exclusive" },
          240,
          3600,
          1,
          [{ amount: "10.00", currency: "USD" }],
        ],
      ],
    );
    const u = await admin.finops.gpu.usage({
      from,
      to,
      groupBy: ["namespace", "pod", "gpu", "share"],
      filter: { deployment },
    });
    assert.deepEqual(e.pods, u.rows);
    // A tenant's key: a shared deployment's pods are not its to see.
    const keyA = (await admin.auth.apiKeys.create({ role: "viewer", tenant_id: tenantA })).key;
    const a = new EnterpriseAI({ baseUrl: server.url, apiKey: keyA, maxRetries: 0 });
    assert.deepEqual((await a.finops.gpu.explain({ deploymentId: deployment, from, to })).pods, []);
  });

  test("a tenant sees its own lines and the other tenants summed, nothing else", async () => {
    const keyA = (await admin.auth.apiKeys.create({ role: "viewer", tenant_id: tenantA })).key;
    const a = new EnterpriseAI({ baseUrl: server.url, apiKey: keyA, maxRetries: 0 });
    const e = await a.finops.gpu.explain({ deploymentId: deployment, from, to });
    assert.deepEqual(
      e.buckets[0]?.claims.map((c) => c.party),
      [{ kind: "tenant", tenant_id: tenantA }, { kind: "other_tenants" }],
    );
    assert.ok(!JSON.stringify(e).includes(tenantB));
    await assert.rejects(a.finops.gpu.explain({ deploymentId: deployment, from, to, tenantId: tenantB }), PermissionDeniedError);
    const keyC = (await admin.auth.apiKeys.create({ role: "viewer", tenant_id: tenantC })).key;
    const c = new EnterpriseAI({ baseUrl: server.url, apiKey: keyC, maxRetries: 0 });
    await assert.rejects(c.finops.gpu.explain({ deploymentId: deployment, from, to }), NotFoundError);
    const asB = await admin.finops.gpu.explain({ deploymentId: deployment, from, to, tenantId: tenantB });
    assert.ok(!JSON.stringify(asB).includes(tenantA));
  });
});
