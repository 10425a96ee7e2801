/** Budgets and reservations against a real server: each test has a tenant of its own (budgets are per tenant). */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  BudgetExceededError,
  ConflictError,
  EnterpriseAI,
  EnterpriseAIError,
  NotFoundError,
  type Budget,
  type Reservation,
} from "@enterprise-ai/sdk";
import { uniq } from "./helpers/data.js";
import { startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;
let admin: EnterpriseAI;

before(async () => {
  server = await startServer();
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
});
after(async () => {
  await server?.stop();
});

/** A new tenant and a client of the given role in it. */
async function tenantWith(role: "developer" | "tenant_admin" | "finops" = "developer"): Promise<{
  id: string;
  slug: string;
  client: EnterpriseAI;
}> {
  const slug = uniq("bud");
  const { id } = await admin.tenants.create({ slug, name: "Budget test" });
  const { key } = await admin.auth.apiKeys.create({ role, tenant_id: id });
  return { id, slug, client: new EnterpriseAI({ baseUrl: server.url, apiKey: key, maxRetries: 0 }) };
}

function enforcing(tenantId: string, amount: string): Promise<Budget> {
  return admin.finops.budgets.create({
    tenant_id: tenantId,
    name: "monthly",
    limit: { amount, currency: "EUR" },
    enforce: true,
  });
}

async function current(id: string) {
  const b = await admin.finops.budgets.get(id);
  assert.ok(b.current, "a budget in force has a current standing");
  return b.current;
}

describe("budgets", () => {
  test("create as platform admin for a tenant, read it back with current", async () => {
    const t = await tenantWith();
    const created = await admin.finops.budgets.create({
      tenant_id: t.id,
      name: "acme monthly",
      limit: { amount: "1000.00", currency: "EUR" },
      thresholds_pct: [50, 100],
      enforce: true,
      webhook_url: "https://hooks.example.com/eai",
    });
    assert.match(created.id, /^bud_\d+$/);
    assert.equal(created.tenant_id, t.id);
    assert.deepEqual(created.limit, { amount: "1000.00", currency: "EUR" });
    assert.equal(created.status, "active");
    assert.match(created.webhook_secret ?? "", /^whsec_[0-9a-f]{64}$/);

    const got = await admin.finops.budgets.get(created.id);
    assert.equal(got.webhook_secret, undefined);
    assert.deepEqual(got.current && { ...got.current, month: "" }, {
      month: "",
      spent: { amount: "0.00", currency: "EUR" },
      held: { amount: "0.00", currency: "EUR" },
      left: { amount: "1000.00", currency: "EUR" },
      spent_tokens: 0,
      held_tokens: 0,
      tokens_left: null,
      crossed_pct: [],
    });
    const scoped = await admin.withOptions({ tenant: t.slug }).finops.budgets.list();
    assert.deepEqual(scoped.items.map((b) => b.id), [created.id]);
    const own = await t.client.finops.budgets.list();
    assert.deepEqual(own.items.map((b) => b.id), [created.id]);
  });

  test("a finops key creates its own tenant's budget", async () => {
    const t = await tenantWith("finops");
    const b = await t.client.finops.budgets.create({ name: "own", limit: { amount: 2.5, currency: "USD" } });
    assert.equal(b.tenant_id, t.id);
    assert.deepEqual(b.limit, { amount: "2.50", currency: "USD" });
    assert.equal(b.enforce, false);
  });

  test("supersede and disable", async () => {
    const t = await tenantWith();
    const small = await enforcing(t.id, "1.00");
    await assert.rejects(
      t.client.finops.reservations.create({ action: "llm.invoke", estimate: { cost: "2.00" } }),
      BudgetExceededError,
    );
    const change = await admin.finops.budgets.supersede(small.id, { limit: { amount: "10", currency: "EUR" } });
    assert.equal(change.closed.id, small.id);
    assert.equal(change.closed.status, "closed");
    assert.ok(change.opened);
    assert.deepEqual(change.opened.limit, { amount: "10.00", currency: "EUR" });
    assert.equal(change.opened.name, "monthly");
    const r = await t.client.finops.reservations.create({ action: "llm.invoke", estimate: { cost: "2.00" } });
    await t.client.finops.reservations.release(r.id);

    const off = await admin.finops.budgets.disable(change.opened.id);
    assert.equal(off.opened, null);
    assert.equal(off.closed.status, "closed");
    const big = await t.client.finops.reservations.create({ action: "llm.invoke", estimate: { cost: "500" } });
    assert.equal(big.status, "held", "no budget in force: nothing to enforce");
  });

  test("another tenant's key gets not found", async () => {
    const t = await tenantWith();
    const budget = await enforcing(t.id, "5.00");
    const r = await t.client.finops.reservations.create({ action: "llm.invoke", estimate: { cost: "1.00" } });
    const stranger = await tenantWith("tenant_admin");
    await assert.rejects(stranger.client.finops.budgets.get(budget.id), NotFoundError);
    await assert.rejects(stranger.client.finops.reservations.get(r.id), NotFoundError);
    await assert.rejects(stranger.client.finops.reservations.commit(r.id, { cost: "1" }), NotFoundError);
    await assert.rejects(stranger.client.finops.reservations.release(r.id), NotFoundError);
    assert.deepEqual((await stranger.client.finops.budgets.list()).items, []);
    assert.equal((await t.client.finops.reservations.get(r.id)).status, "held");
  });
});

describe("reservations", () => {
  test("a budget that fits 5 grants exactly 5 of 8; the others are 402 budget_exceeded", async () => {
    const t = await tenantWith();
    const budget = await enforcing(t.id, "5.00");
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, () =>
        t.client.finops.reservations.create({ action: "llm.invoke", estimate: { cost: "1.00", tokens: 100 } }),
      ),
    );
    const granted = outcomes.filter((o): o is PromiseFulfilledResult<Reservation> => o.status === "fulfilled");
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
    assert.equal(granted.length, 5);
    assert.equal(refused.length, 3);
    for (const g of granted) {
      assert.equal(g.value.status, "held");
      assert.deepEqual(g.value.estimate, { cost: "1.00", tokens: 100, currency: "EUR" });
    }
    for (const r of refused) {
      const e: unknown = r.reason;
      assert.ok(e instanceof BudgetExceededError, String(e));
      assert.ok(e instanceof EnterpriseAIError);
      assert.equal(e.status, 402);
      assert.equal(e.code, "budget_exceeded");
      assert.deepEqual(e.details?.map((d) => d.field), ["estimate.cost"]);
      assert.ok(e.message.includes(budget.id));
      assert.ok(e.messageI18n?.fr);
    }
    const c = await current(budget.id);
    assert.deepEqual(c.held, { amount: "5.00", currency: "EUR" });
    assert.deepEqual(c.left, { amount: "0.00", currency: "EUR" });
    assert.equal(c.held_tokens, 500);
  });

  test("commit is idempotent and counts the actual; release frees a hold", async () => {
    const t = await tenantWith();
    const budget = await enforcing(t.id, "5.00");
    const r = await t.client.finops.reservations.create({
      action: "llm.invoke",
      estimate: { cost: "2.00", tokens: 4000 },
      deployment_id: "vllm-llama-70b",
    });
    const done = await t.client.finops.reservations.commit(r.id, { cost: "1.50", tokens: 3100 });
    assert.equal(done.status, "committed");
    assert.deepEqual(done.actual, { cost: "1.50", tokens: 3100, currency: "EUR" });
    assert.ok(done.usage_event_id);
    assert.deepEqual(await t.client.finops.reservations.commit(r.id, { cost: "9.99" }), done);
    let c = await current(budget.id);
    assert.deepEqual(c.spent, { amount: "1.50", currency: "EUR" });
    assert.equal(c.spent_tokens, 3100);

    const hold = await t.client.finops.reservations.create({ action: "llm.invoke", estimate: { cost: "3.00" } });
    await assert.rejects(
      t.client.finops.reservations.create({ action: "llm.invoke", estimate: { cost: "1.00" } }),
      BudgetExceededError,
    );
    const released = await t.client.finops.reservations.release(hold.id);
    assert.equal(released.status, "released");
    assert.deepEqual(await t.client.finops.reservations.release(hold.id), released);
    c = await current(budget.id);
    assert.deepEqual(c.held, { amount: "0.00", currency: "EUR" });
    await t.client.finops.reservations.create({ action: "llm.invoke", estimate: { cost: "1.00" } });

    await assert.rejects(t.client.finops.reservations.release(r.id), ConflictError);
    await assert.rejects(t.client.finops.reservations.commit(hold.id, { cost: "1" }), ConflictError);
  });

  test("a usage_reporter names the tenant", async () => {
    const t = await tenantWith();
    const { key } = await admin.auth.apiKeys.create({ role: "usage_reporter" });
    const gw = new EnterpriseAI({ baseUrl: server.url, apiKey: key, maxRetries: 0 });
    const r = await gw.finops.reservations.create({
      action: "llm.invoke",
      estimate: { cost: 0.1 },
      tenant_id: t.id,
      ttl_seconds: 60,
    });
    assert.equal(r.tenant_id, t.id);
    const byHeader = await gw.withOptions({ tenant: t.slug }).finops.reservations.create({
      action: "llm.invoke",
      estimate: { cost: "0.10" },
    });
    assert.equal(byHeader.tenant_id, t.id);
  });

  test("run commits the callback's actual, or the estimate; releases and rethrows on error", async () => {
    const t = await tenantWith();
    const budget = await enforcing(t.id, "5.00");
    const rs = t.client.finops.reservations;
    let seen: Reservation | undefined;
    const done = await rs.run({ action: "llm.invoke", estimate: { cost: "1.00", tokens: 400 } }, async (r) => {
      seen = r;
      return { cost: "0.75", tokens: 300 };
    });
    assert.equal(seen?.status, "held");
    assert.equal(done.id, seen?.id);
    assert.equal(done.status, "committed");
    assert.deepEqual(done.actual, { cost: "0.75", tokens: 300, currency: "EUR" });

    const plain = await rs.run({ action: "llm.invoke", estimate: { cost: "1.25", tokens: 10 } }, () => undefined);
    assert.deepEqual(plain.actual, { cost: "1.25", tokens: 10, currency: "EUR" });

    let failedId = "";
    await assert.rejects(
      rs.run({ action: "llm.invoke", estimate: { cost: "2.00" } }, async (r) => {
        failedId = r.id;
        throw new Error("model down");
      }),
      /model down/,
    );
    assert.equal((await rs.get(failedId)).status, "released");

    let ran = false;
    await assert.rejects(
      rs.run({ action: "llm.invoke", estimate: { cost: "4.00" } }, () => {
        ran = true;
        return undefined;
      }),
      BudgetExceededError,
    );
    assert.equal(ran, false);
    const c = await current(budget.id);
    assert.deepEqual(c.spent, { amount: "2.00", currency: "EUR" });
    assert.deepEqual(c.held, { amount: "0.00", currency: "EUR" });
  });
});
