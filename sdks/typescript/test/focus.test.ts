/**
 * The FOCUS 1.2 export (`finops.gpu.allocationFocus`) against a real server of this file's own: a shared
 * deployment at 10 USD per GPU-hour for two hours (20.00), tenant A 500 tokens in + 200 out per hour, tenant B
 * 300 in per hour (70/30), plus an idle deployment whose cost stays partly unallocated. The CSV's columns, its
 * BilledCost summing exactly to the allocation of the same period, Parquet, and the typed validation error.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { EnterpriseAI, ValidationError, type UsageEventInput } from "@enterprise-ai/sdk";
import { parseCsv } from "./helpers/csv.js";
import { hourOfSamples, hourStart, uniq } from "./helpers/data.js";
import { equal, sum } from "./helpers/money.js";
import { startServer, type TestServer } from "./helpers/server.js";

const HOUR = 3_600_000;
const NIL_UUID = "00000000-0000-0000-0000-000000000000";

let server: TestServer;
let admin: EnterpriseAI;
const deployment = uniq("focus-shared");
const idle = uniq("focus-idle");
let tenantA: string;
let tenantB: string;
let from: Date;
let to: Date;

function event(tenant: string, dep: string, at: Date, units: Record<string, number | string>): UsageEventInput {
  return { usage_type: "llm_tokens", source: "gateway", occurred_at: at, deployment_id: dep, tenant_id: tenant, units };
}

const billed = (rows: Record<string, string>[]) => sum(rows.map((r) => r["BilledCost"] ?? "x"));

before(async () => {
  server = await startServer();
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  from = hourStart(4);
  to = new Date(from.getTime() + 2 * HOUR);
  await admin.finops.allocationPolicies.create({
    name: "flat",
    deployment_pattern: "focus-*",
    currency: "USD",
    gpu_hourly_cost: 10,
    effective_from: "2020-01-01",
  });
  const second = new Date(from.getTime() + HOUR);
  const samples = [
    ...hourOfSamples("GPU-focus-1", deployment, from),
    ...hourOfSamples("GPU-focus-1", deployment, second),
    ...hourOfSamples("GPU-focus-2", idle, from),
  ];
  assert.equal((await admin.finops.gpu.ingestSamples({ samples })).accepted, 720);
  tenantA = (await admin.tenants.create({ slug: uniq("focus-a"), name: "Focus A" })).id;
  tenantB = (await admin.tenants.create({ slug: uniq("focus-b"), name: "Focus B" })).id;
  const events: UsageEventInput[] = [];
  for (const h of [0, 1]) {
    const at = new Date(from.getTime() + h * HOUR + 600_000);
    events.push(event(tenantA, deployment, at, { tokens_in: 500, tokens_out: 200 }));
    events.push(event(tenantB, deployment, at, { tokens_in: 300 }));
  }
  events.push(event(tenantB, idle, new Date(from.getTime() + 600_000), { gpu_seconds: "1234.5" }));
  assert.equal((await admin.usage.events({ events })).accepted, 5);
});
after(async () => {
  await server?.stop();
});

describe("finops.gpu.allocationFocus", () => {
  test("the CSV's BilledCost sums exactly to the allocation of the same period", async () => {
    const allocation = await admin.finops.gpu.allocation({ from, to });
    const csv = await admin.finops.gpu.allocationFocus({ from, to });
    assert.ok(csv instanceof Uint8Array);
    const headerLine = new TextDecoder().decode(csv).split("\r\n", 1)[0] ?? "";
    for (const col of ["BilledCost", "ChargePeriodStart", "SubAccountId", "x_AllocationPolicyId"]) {
      assert.ok(headerLine.split(",").includes(col), headerLine);
    }
    const { header, rows } = parseCsv(csv);
    assert.deepEqual(header, headerLine.split(","));
    const allocated = rows.filter((r) => r["x_Unallocated"] === "false");
    const unallocated = rows.filter((r) => r["x_Unallocated"] === "true");
    assert.equal(allocated.length + unallocated.length, rows.length);
    assert.ok(unallocated.length > 0, "the idle deployment leaves some cost unallocated");
    assert.deepEqual(new Set(unallocated.map((r) => r["SubAccountId"])), new Set([NIL_UUID]));

    const totalAllocated = sum(allocation.deployments.map((d) => d.allocated));
    const totalCost = sum(allocation.deployments.map((d) => d.cost));
    assert.ok(!equal(totalAllocated, "0") && !equal(totalAllocated, totalCost), `${totalAllocated} / ${totalCost}`);
    assert.ok(equal(billed(allocated), totalAllocated), `${billed(allocated)} vs ${totalAllocated}`);
    assert.ok(equal(billed(rows), totalCost), `${billed(rows)} vs ${totalCost}`);
    const mine = allocated.filter((r) => r["ResourceId"] === deployment);
    assert.ok(equal(billed(mine), "20.00"), billed(mine));
    for (const item of allocation.items) {
      const its = allocated.filter(
        (r) => r["SubAccountId"] === item.tenant_id && r["ResourceId"] === item.deployment_id && r["x_AllocationPolicyId"] === item.policy_id,
      );
      assert.ok(its.length > 0, JSON.stringify(item));
      assert.ok(equal(billed(its), item.allocated.amount), `${billed(its)} vs ${JSON.stringify(item)}`);
      for (const r of its) {
        assert.equal(r["BillingCurrency"], item.allocated.currency);
        assert.equal(r["EffectiveCost"], r["BilledCost"]);
      }
    }
    assert.deepEqual(new Set(allocated.map((r) => r["SubAccountId"])), new Set([tenantA, tenantB]));
  });

  test("a tenant's view holds its rows only", async () => {
    const asA = admin.withOptions({ tenant: tenantA });
    const scoped = await asA.finops.gpu.allocation({ from, to });
    const { rows } = parseCsv(await asA.finops.gpu.allocationFocus({ from, to, format: "csv" }));
    assert.ok(rows.length > 0);
    assert.deepEqual(new Set(rows.map((r) => r["SubAccountId"])), new Set([tenantA]));
    assert.deepEqual(new Set(rows.map((r) => r["x_Unallocated"])), new Set(["false"]));
    const want = sum(scoped.items.map((i) => i.allocated.amount));
    assert.ok(equal(want, "14.00"), want);
    assert.ok(equal(billed(rows), want), billed(rows));
  });

  test("format parquet answers a Parquet file", async () => {
    const parquet = await admin.finops.gpu.allocationFocus({ from: from.toISOString(), to: to.toISOString(), format: "parquet" });
    assert.ok(parquet instanceof Uint8Array && parquet.length > 8);
    const magic = (b: Uint8Array) => new TextDecoder().decode(b);
    assert.equal(magic(parquet.subarray(0, 4)), "PAR1");
    assert.equal(magic(parquet.subarray(parquet.length - 4)), "PAR1");
  });

  test("another format is a ValidationError naming format", async () => {
    const bad = { from, to, format: "xml" } as unknown as Parameters<typeof admin.finops.gpu.allocationFocus>[0];
    await assert.rejects(admin.finops.gpu.allocationFocus(bad), (e: unknown) => {
      assert.ok(e instanceof ValidationError, String(e));
      assert.equal(e.status, 422);
      assert.deepEqual(e.fields, ["format"]);
      return true;
    });
  });
});
