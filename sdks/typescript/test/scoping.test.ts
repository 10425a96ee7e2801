/**
 * Tenant header scoping and exact money, end to end: acme and globex share a deployment (usage events weigh
 * its split), globex also has a dedicated one; a platform key signed in to acme sees only acme, without a
 * tenant sees both. Every amount is a decimal string and adds up to the cent, in BigInt arithmetic.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { EnterpriseAI, PermissionDeniedError, type Allocation } from "@enterprise-ai/sdk";
import { WORKED_EXAMPLE_POLICY, hourOfSamples, hourStart, usageEvent } from "./helpers/data.js";
import { equal, places, sum } from "./helpers/money.js";
import { startServer, type TestServer } from "./helpers/server.js";

const ACME_ID = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";
const GLOBEX_ID = "3c1d7b2a-5e4f-4a6b-8c9d-0e1f2a3b4c5d";
const SHARED = "vllm-llama-70b";
const DEDICATED = "globex-finetune";
const DECIMAL = /^-?\d+(\.\d+)?$/;

let server: TestServer;
let admin: EnterpriseAI;
let hour: Date;
let period: { from: Date; to: Date };

before(async () => {
  server = await startServer();
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey });
  await admin.tenants.create({ slug: "acme", name: "Acme Corp", id: ACME_ID });
  await admin.tenants.create({ slug: "globex", name: "Globex", id: GLOBEX_ID });
  await admin.finops.allocationPolicies.create(WORKED_EXAMPLE_POLICY);

  hour = hourStart(3);
  period = { from: hour, to: new Date(hour.getTime() + 3 * 3_600_000) };
  const next = new Date(hour.getTime() + 3_600_000);
  const idle = new Date(hour.getTime() + 2 * 3_600_000);
  await admin.finops.gpu.ingestSamples({
    samples: [
      ...hourOfSamples("GPU-shared-0", SHARED, hour),
      ...hourOfSamples("GPU-shared-1", SHARED, hour),
      ...hourOfSamples("GPU-shared-0", SHARED, next),
      ...hourOfSamples("GPU-shared-0", SHARED, idle),
      ...hourOfSamples("GPU-globex-0", DEDICATED, hour, GLOBEX_ID),
    ],
  });
  const at = (min: number, h = hour) => new Date(h.getTime() + min * 60_000);
  await admin.usage.events({
    events: [
      usageEvent({ deployment: SHARED, at: at(5), tenantId: ACME_ID, tokensIn: 7000, tokensOut: 1200 }),
      usageEvent({ deployment: SHARED, at: at(25), tenantId: ACME_ID, tokensIn: 3000, tokensOut: 800 }),
      usageEvent({ deployment: SHARED, at: at(40), tenantId: GLOBEX_ID, tokensIn: 2000, tokensOut: 500 }),
      usageEvent({ deployment: SHARED, at: at(10, next), tenantId: GLOBEX_ID, tokensIn: 1000, tokensOut: 100 }),
    ],
  });
});
after(async () => {
  await server?.stop();
});

function tenantsOf(a: Allocation): string[] {
  return [...new Set([...a.items.map((i) => i.tenant_id), ...a.tenants.map((t) => t.tenant_id)])].sort();
}

/** Every money field is a decimal string; the contract's sums hold to the cent. */
function assertExactMoney(a: Allocation): void {
  for (const d of a.deployments) {
    for (const v of [d.cost, d.allocated, d.unallocated]) {
      assert.equal(typeof v, "string");
      assert.match(v, DECIMAL);
      assert.ok(places(v) <= 2, `${v}: at most cents`);
    }
    assert.ok(equal(sum([d.allocated, d.unallocated]), d.cost), `${d.deployment_id}: ${d.allocated} + ${d.unallocated} = ${d.cost}`);
    const days = a.daily.filter((x) => x.deployment_id === d.deployment_id && x.cost.currency === d.currency);
    if (days.length > 0) {
      assert.ok(equal(sum(days.map((x) => x.cost.amount)), d.cost), `${d.deployment_id}: the days sum to the cost`);
    }
  }
  for (const m of [...a.items.map((i) => i.allocated), ...a.tenants.map((t) => t.cost), ...a.daily.map((x) => x.cost)]) {
    assert.equal(typeof m.amount, "string");
    assert.match(m.amount, DECIMAL);
    assert.match(m.currency, /^[A-Z]{3}$/);
  }
  for (const t of a.tenants) {
    assert.equal(typeof t.share, "number");
    assert.equal(typeof t.gpu_seconds, "number");
  }
}

describe("tenant scoping", () => {
  test("a platform key without a tenant sees both tenants", async () => {
    const all = await admin.finops.gpu.allocation(period);
    assert.deepEqual(tenantsOf(all), [GLOBEX_ID, ACME_ID].sort());
    assert.deepEqual(all.deployments.map((d) => d.deployment_id).sort(), [DEDICATED, SHARED].sort());
    assertExactMoney(all);
  });

  test("the same key signed in to acme (slug or id) sees only acme", async () => {
    for (const tenant of ["acme", ACME_ID]) {
      const acme = await admin.withOptions({ tenant }).finops.gpu.allocation(period);
      assert.ok(acme.items.length > 0, JSON.stringify(acme));
      assert.deepEqual(tenantsOf(acme), [ACME_ID]);
      assert.ok(acme.items.every((i) => i.deployment_id === SHARED));
      assert.ok(!acme.deployments.some((d) => d.deployment_id === DEDICATED), "not globex's dedicated deployment");
      assert.ok(!JSON.stringify(acme).includes(GLOBEX_ID), "nothing of globex");
      assertExactMoney(acme);
    }
  });

  test("acme's own finops key sees what the platform key signed in to acme sees", async () => {
    const key = await admin.auth.apiKeys.create({ role: "finops", tenant_id: ACME_ID });
    const finops = new EnterpriseAI({ baseUrl: server.url, apiKey: key.key });
    const own = await finops.finops.gpu.allocation(period);
    const signedIn = await admin.finops.gpu.allocation(period, { tenant: "acme" });
    assert.deepEqual(own.items, signedIn.items);
    assert.deepEqual(own.tenants, signedIn.tenants);
    await assert.rejects(finops.finops.gpu.allocation(period, { tenant: "globex" }), PermissionDeniedError);
  });
});

describe("exact money", () => {
  test("the SDK hands over the server's exact decimal strings, untouched", async () => {
    const res = await fetch(
      `${server.url}/v1/finops/gpu/allocation?from=${encodeURIComponent(period.from.toISOString())}&to=${encodeURIComponent(period.to.toISOString())}`,
      { headers: { Authorization: `Bearer ${server.adminKey}` } },
    );
    const text = await res.text();
    const viaSdk = await admin.finops.gpu.allocation(period);
    assert.deepEqual(viaSdk, JSON.parse(text));
    for (const d of viaSdk.deployments) assert.ok(text.includes(`"cost":"${d.cost}"`), d.cost);
  });

  test("per deployment, allocated + unallocated = cost; the tenants' costs add up to what was allocated", async () => {
    const all = await admin.finops.gpu.allocation(period);
    const shared = all.deployments.find((d) => d.deployment_id === SHARED)!;
    const dedicated = all.deployments.find((d) => d.deployment_id === DEDICATED)!;
    assert.equal(shared.currency, "EUR");
    assert.equal(shared.dedicated, false);
    assert.equal(dedicated.dedicated, true);
    assert.ok(equal(dedicated.unallocated, "0"), "a dedicated deployment is all its owner's");
    assert.ok(!equal(shared.cost, "0"));
    // The items of each deployment add up to its allocated amount, to the cent.
    for (const d of all.deployments) {
      const items = all.items.filter((i) => i.deployment_id === d.deployment_id).map((i) => i.allocated.amount);
      assert.ok(equal(sum(items), d.allocated), `${d.deployment_id}: items ${items.join(" + ")} = ${d.allocated}`);
    }
    // Each tenant's row is the sum of its items.
    for (const t of all.tenants) {
      const items = all.items.filter((i) => i.tenant_id === t.tenant_id).map((i) => i.allocated.amount);
      assert.ok(equal(sum(items), t.cost.amount), `${t.tenant_id}: ${items.join(" + ")} = ${t.cost.amount}`);
    }
    // The idle hour (samples, no usage event) stays unallocated under the default idle_capacity.
    assert.ok(!equal(shared.unallocated, "0"), `unallocated ${shared.unallocated}`);
  });
});
