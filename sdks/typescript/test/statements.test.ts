/**
 * Statements (`finops.gpu.statements.issue`, `list`, `get`, `getCsv`) and the FOCUS export's `version` and
 * `granularity`, against a real server of this file's own (the month's statements hold only this file's data).
 *
 * The data lies in the last hour of the previous month (over, well within the raw retention), under a flat
 * 10 USD per GPU-hour (no energy price):
 * - a shared deployment, one GPU for the hour: 10.00 USD; tenant A 500 tokens in + 200 out, tenant B 300 in:
 *   A 10.00 x 700 / 1000 = 7.00, B 10.00 x 300 / 1000 = 3.00; A's 0.7 of the GPU-hour, B's 0.3;
 * - an idle deployment, one GPU for the hour nobody used: 10.00 USD unallocated, the platform's statement
 *   (tenant the nil uuid).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  EnterpriseAI,
  NotFoundError,
  PermissionDeniedError,
  ValidationError,
  type StatementIssued,
  type UsageEventInput,
} from "@enterprise-ai/sdk";
import { parseCsv } from "./helpers/csv.js";
import { hourOfSamples, uniq } from "./helpers/data.js";
import { equal, sum } from "./helpers/money.js";
import { startServer, type TestServer } from "./helpers/server.js";

const HOUR = 3_600_000;
const NIL_UUID = "00000000-0000-0000-0000-000000000000";
const CSV_HEADER = "kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency";

let server: TestServer;
let admin: EnterpriseAI;
let tenantA: string;
let tenantB: string;
let viewerA: EnterpriseAI;
let hour: Date;
let period: string;
let first: StatementIssued;
const idemKey = uniq("statements-idem");
const shared = uniq("st-shared");
const idle = uniq("st-idle");

function event(tenant: string, dep: string, at: Date, units: Record<string, number | string>): UsageEventInput {
  return { usage_type: "llm_tokens", source: "gateway", occurred_at: at, deployment_id: dep, tenant_id: tenant, units };
}

function numberOf(tenant: string): string {
  const mine = first.issued.filter((s) => s.tenant_id === tenant);
  assert.equal(mine.length, 1, JSON.stringify(first));
  return mine[0]!.number;
}

const amountsOf = (ms: readonly { amount: string; currency: string }[]) => ms.map((m) => [m.amount, m.currency]);

before(async () => {
  server = await startServer();
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  const now = new Date();
  const thisMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  hour = new Date(thisMonth - HOUR);
  period = hour.toISOString().slice(0, 7);
  await admin.finops.allocationPolicies.create({
    name: "flat",
    deployment_pattern: "st-*",
    currency: "USD",
    gpu_hourly_cost: 10,
    effective_from: "2020-01-01",
  });
  const samples = [...hourOfSamples("GPU-st-1", shared, hour), ...hourOfSamples("GPU-st-2", idle, hour)];
  assert.equal((await admin.finops.gpu.ingestSamples({ samples })).accepted, 480);
  tenantA = (await admin.tenants.create({ slug: uniq("st-a"), name: "Statements A" })).id;
  tenantB = (await admin.tenants.create({ slug: uniq("st-b"), name: "Statements B" })).id;
  const at = new Date(hour.getTime() + 600_000);
  const events = [
    event(tenantA, shared, at, { tokens_in: 500, tokens_out: 200 }),
    event(tenantB, shared, at, { tokens_in: 300 }),
  ];
  assert.equal((await admin.usage.events({ events })).accepted, 2);
  const { key } = await admin.auth.apiKeys.create({ role: "viewer", tenant_id: tenantA });
  viewerA = new EnterpriseAI({ baseUrl: server.url, apiKey: key, maxRetries: 0 });
  first = await admin.finops.gpu.statements.issue({ period }, { idempotencyKey: idemKey });
});
after(async () => {
  await server?.stop();
});

describe("finops.gpu.statements", () => {
  test("issue: one per tenant with cost and one of the unallocated capacity, numbered", () => {
    assert.deepEqual(first.already_issued, []);
    const byTenant = new Map(first.issued.map((s) => [s.tenant_id, s]));
    assert.deepEqual(new Set(byTenant.keys()), new Set([tenantA, tenantB, NIL_UUID]));
    assert.deepEqual(amountsOf(byTenant.get(tenantA)!.totals), [["7.00", "USD"]]);
    assert.deepEqual(amountsOf(byTenant.get(tenantB)!.totals), [["3.00", "USD"]]);
    assert.deepEqual(amountsOf(byTenant.get(NIL_UUID)!.totals), [["10.00", "USD"]]);
    assert.equal(byTenant.get(tenantA)!.tenant_name, "Statements A");
    const numbers = first.issued.map((s) => s.number).sort();
    assert.deepEqual(numbers, [1, 2, 3].map((n) => `ST-${period}-000${n}`));
    for (const s of first.issued) assert.equal(s.period, period);
  });

  test("issue again: the same key answers the first answer, a new call issues nothing twice", async () => {
    const numbers = first.issued.map((s) => s.number).sort();
    const retried = await admin.finops.gpu.statements.issue({ period }, { idempotencyKey: idemKey });
    assert.deepEqual(retried.issued.map((s) => s.number).sort(), numbers);
    // A Date names its UTC month.
    const again = await admin.finops.gpu.statements.issue({ period: new Date(hour.getTime() - 5 * 24 * HOUR) });
    assert.deepEqual(again.issued, []);
    assert.deepEqual(again.already_issued.map((s) => s.number).sort(), numbers);
    const one = await admin.finops.gpu.statements.issue({ period, tenantId: tenantB });
    assert.deepEqual(one.issued, []);
    assert.deepEqual(one.already_issued.map((s) => s.number), [numberOf(tenantB)]);
  });

  test("issue: a month not over is a ValidationError naming period", async () => {
    await assert.rejects(admin.finops.gpu.statements.issue({ period: new Date() }), (e: unknown) => {
      assert.ok(e instanceof ValidationError, String(e));
      assert.deepEqual(e.fields, ["period"]);
      return true;
    });
  });

  test("list: by number within the period, filtered by period and tenant", async () => {
    const all = await admin.finops.gpu.statements.list();
    assert.deepEqual(
      all.statements.map((s) => s.number),
      first.issued.map((s) => s.number).sort(),
    );
    const ofMonth = await admin.finops.gpu.statements.list({ period });
    assert.deepEqual(ofMonth.statements, all.statements);
    const ofA = await admin.finops.gpu.statements.list({ tenantId: tenantA });
    assert.deepEqual(ofA.statements.map((s) => s.number), [numberOf(tenantA)]);
    assert.deepEqual((await admin.finops.gpu.statements.list({ period: "2020-01" })).statements, []);
    await assert.rejects(admin.finops.gpu.statements.list({ period: "2026-13" }), (e: unknown) => {
      assert.ok(e instanceof ValidationError, String(e));
      assert.deepEqual(e.fields, ["period"]);
      return true;
    });
  });

  test("get: the lines and totals match the month's allocation to the cent", async () => {
    const st = await admin.finops.gpu.statements.get(numberOf(tenantA));
    assert.equal(st.tenant_id, tenantA);
    assert.equal(st.period, period);
    assert.equal(Date.parse(st.to), hour.getTime() + HOUR);
    assert.equal(st.lines.length, 1, JSON.stringify(st.lines));
    const line = st.lines[0]!;
    assert.equal(line.kind, "charge");
    assert.equal(line.deployment_id, shared);
    assert.ok(equal(line.gpu_hours, "0.7"), line.gpu_hours); // 0.7 of the one GPU-hour
    assert.deepEqual([line.amount.amount, line.amount.currency], ["7.00", "USD"]);
    assert.deepEqual(amountsOf(st.totals), [["7.00", "USD"]]);
    assert.deepEqual(st.adjustments, []);
    assert.deepEqual(st.adjusted_totals, st.totals);

    const allocation = await admin.finops.gpu.allocation({ from: st.from, to: st.to });
    const mine = allocation.items.filter((i) => i.tenant_id === tenantA);
    assert.ok(equal(sum(mine.map((i) => i.allocated.amount)), st.totals[0]!.amount));

    const platform = await admin.finops.gpu.statements.get(numberOf(NIL_UUID));
    assert.deepEqual(amountsOf(platform.totals), [["10.00", "USD"]]);
    assert.deepEqual(
      platform.lines.filter((l) => !equal(l.amount.amount, "0")).map((l) => [l.deployment_id, l.amount.amount]),
      [[idle, "10.00"]],
    );
    await assert.rejects(admin.finops.gpu.statements.get(`ST-${period}-9999`), NotFoundError);
  });

  test("getCsv: the header line, the charge, the total and the adjusted total", async () => {
    const csv = await admin.finops.gpu.statements.getCsv(numberOf(tenantB));
    assert.equal(typeof csv, "string");
    const lines = csv.split(/\r?\n/).filter((l) => l !== "");
    assert.equal(lines[0], CSV_HEADER);
    const rows = lines.slice(1).map((l) => l.split(","));
    const kinds = rows.map((r) => r[0]);
    assert.deepEqual(kinds, ["charge", "total", "adjusted_total"]);
    assert.equal(rows[0]![1], shared);
    for (const r of rows) assert.deepEqual([r[5], r[6]], ["3.00", "USD"]);
  });

  test("a tenant's key sees its own statement only", async () => {
    const mine = numberOf(tenantA);
    const listed = await viewerA.finops.gpu.statements.list();
    assert.deepEqual(listed.statements.map((s) => s.number), [mine]);
    assert.deepEqual(amountsOf((await viewerA.finops.gpu.statements.get(mine)).totals), [["7.00", "USD"]]);
    for (const other of [numberOf(tenantB), numberOf(NIL_UUID)]) {
      await assert.rejects(viewerA.finops.gpu.statements.get(other), NotFoundError);
      await assert.rejects(viewerA.finops.gpu.statements.getCsv(other), NotFoundError);
    }
    await assert.rejects(viewerA.finops.gpu.statements.issue({ period }), PermissionDeniedError);
  });
});

describe("finops.gpu.statements: adjustments", () => {
  test("data arriving after issue is an adjustment; the issued lines and totals stay", async () => {
    // A server of its own: a dedicated deployment of one tenant, one GPU for the last hour of the previous month at
    // a flat 10 USD per GPU-hour: issued at 10.00. A second GPU's hour arrives after: the allocation now is 2
    // GPU-hours, 20.00; one adjustment of +1 GPU-hour and +10.00 USD, adjusted totals 20.00.
    const own = await startServer();
    try {
      const c = new EnterpriseAI({ baseUrl: own.url, apiKey: own.adminKey, maxRetries: 0 });
      const tenant = (await c.tenants.create({ slug: uniq("adj"), name: "Adjusted" })).id;
      await c.finops.allocationPolicies.create({
        name: "flat",
        deployment_pattern: "adj-*",
        currency: "USD",
        gpu_hourly_cost: 10,
        effective_from: "2020-01-01",
      });
      await c.finops.gpu.ingestSamples({ samples: hourOfSamples("GPU-adj-1", "adj-dedicated", hour, tenant) });
      const { issued } = await c.finops.gpu.statements.issue({ period });
      assert.equal(issued.length, 1, JSON.stringify(issued));
      assert.deepEqual(amountsOf(issued[0]!.totals), [["10.00", "USD"]]);

      await c.finops.gpu.ingestSamples({ samples: hourOfSamples("GPU-adj-2", "adj-dedicated", hour, tenant) });
      const st = await c.finops.gpu.statements.get(issued[0]!.number);
      assert.deepEqual(st.lines.map((l) => [l.kind, l.amount.amount]), [["charge", "10.00"]]);
      assert.ok(equal(st.lines[0]!.gpu_hours, "1"), st.lines[0]!.gpu_hours);
      assert.deepEqual(amountsOf(st.totals), [["10.00", "USD"]]);
      assert.equal(st.adjustments.length, 1, JSON.stringify(st.adjustments));
      const adj = st.adjustments[0]!;
      assert.deepEqual([adj.kind, adj.deployment_id, adj.policy_id], ["adjustment", "adj-dedicated", st.lines[0]!.policy_id]);
      assert.ok(equal(adj.gpu_hours, "1"), adj.gpu_hours);
      assert.deepEqual([adj.amount.amount, adj.amount.currency], ["10.00", "USD"]);
      assert.deepEqual(amountsOf(st.adjusted_totals), [["20.00", "USD"]]);
      const kinds = (await c.finops.gpu.statements.getCsv(issued[0]!.number))
        .split(/\r?\n/)
        .filter((l) => l !== "")
        .slice(1)
        .map((l) => l.split(",")[0]);
      assert.deepEqual(kinds, ["charge", "total", "adjustment", "adjusted_total"]);
    } finally {
      await own.stop();
    }
  });
});

describe("finops.gpu.allocationFocus: version and granularity", () => {
  const header = (b: Uint8Array) => (new TextDecoder().decode(b).split("\r\n", 1)[0] ?? "").split(",");

  test("1.3 by default, with AllocatedMethodId; 1.2 without", async () => {
    const to = new Date(hour.getTime() + HOUR);
    const dflt = header(await admin.finops.gpu.allocationFocus({ from: hour, to }));
    const v13 = header(await admin.finops.gpu.allocationFocus({ from: hour, to, version: "1.3" }));
    const v12 = header(await admin.finops.gpu.allocationFocus({ from: hour, to, version: "1.2" }));
    assert.deepEqual(dflt, v13);
    assert.ok(v13.includes("AllocatedMethodId"), v13.join());
    assert.ok(!v12.includes("AllocatedMethodId") && v12.includes("BilledCost"), v12.join());
    const bad = { from: hour, to, version: "1.1" } as unknown as Parameters<typeof admin.finops.gpu.allocationFocus>[0];
    await assert.rejects(admin.finops.gpu.allocationFocus(bad), (e: unknown) => {
      assert.ok(e instanceof ValidationError, String(e));
      assert.deepEqual(e.fields, ["version"]);
      return true;
    });
  });

  test("granularity hour: a row's charge period is the hour", async () => {
    const from = new Date(hour.getTime() - HOUR);
    const to = new Date(hour.getTime() + HOUR);
    const { header: head, rows } = parseCsv(await admin.finops.gpu.allocationFocus({ from, to, granularity: "hour" }));
    assert.ok(head.includes("ChargePeriodStart") && rows.length > 0, head.join());
    // Only the one hour had samples: every row's charge period starts at it.
    const starts = new Set(rows.map((r) => (r["ChargePeriodStart"] ?? "").replace(" ", "T").slice(0, 13)));
    assert.deepEqual(starts, new Set([hour.toISOString().slice(0, 13)]));
  });
});
