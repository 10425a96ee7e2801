/**
 * Cost per token and cost over time against a real server of this file's own (the case of
 * crates/api/tests/http/token_costs.rs): a shared deployment at 10 USD per GPU-hour for two hours (20.00), tenant
 * A 500 tokens in + 200 out per hour, tenant B 300 in per hour (70/30 in tokens).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  EnterpriseAI,
  PermissionDeniedError,
  ValidationError,
  type AllocationSeries,
  type TokenCost,
  type TokenCostList,
  type UsageEventInput,
} from "@enterprise-ai/sdk";
import { hourOfSamples, hourStart, uniq } from "./helpers/data.js";
import { sum } from "./helpers/money.js";
import { startServer, type TestServer } from "./helpers/server.js";

const HOUR = 3_600_000;
const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";

let server: TestServer;
let admin: EnterpriseAI;
const deployment = uniq("vllm-shared");
let tenantA: string;
let tenantB: string;
let from: Date;
let to: Date;

function tokens(at: Date, units: Record<string, number>): UsageEventInput {
  return { usage_type: "llm_tokens", source: "gateway", occurred_at: at, deployment_id: deployment, units };
}

function row(list: TokenCostList, pick: (r: TokenCost) => boolean): TokenCost {
  const r = list.items.find(pick);
  assert.ok(r, JSON.stringify(list));
  return r;
}

before(async () => {
  server = await startServer();
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  from = hourStart(4);
  to = new Date(from.getTime() + 2 * HOUR);
  const policy = await admin.finops.allocationPolicies.create({
    name: "flat",
    deployment_pattern: deployment,
    currency: "USD",
    gpu_hourly_cost: 10,
    effective_from: "2020-01-01",
  });
  const stored = (await admin.finops.allocationPolicies.list()).items.find((p) => p.id === policy.id);
  assert.equal(stored?.output_token_weight, "2.5", "the default weight, a decimal string");
  const samples = [...hourOfSamples("GPU-tok", deployment, from), ...hourOfSamples("GPU-tok", deployment, new Date(from.getTime() + HOUR))];
  assert.equal((await admin.finops.gpu.ingestSamples({ samples })).accepted, 480);

  tenantA = (await admin.tenants.create({ slug: uniq("tok-a"), name: "Tokens A" })).id;
  tenantB = (await admin.tenants.create({ slug: uniq("tok-b"), name: "Tokens B" })).id;
  for (const [tenant, units] of [
    [tenantA, { tokens_in: 500, tokens_out: 200 }],
    [tenantB, { tokens_in: 300 }],
  ] as const) {
    const key = await admin.auth.apiKeys.create({ role: "developer", tenant_id: tenant });
    const developer = new EnterpriseAI({ baseUrl: server.url, apiKey: key.key, maxRetries: 0 });
    const events = [0, 1].map((h) => tokens(new Date(from.getTime() + h * HOUR + 600_000), { ...units }));
    assert.equal((await developer.usage.events({ events })).accepted, 2);
  }
});
after(async () => {
  await server?.stop();
});

describe("finops.gpu.tokenCosts", () => {
  test("per deployment: the allocated 20.00 split by the policy's weight", async () => {
    // 20.00 over 1,600 in and 400 out; an output token weighs 2.5 input tokens: input 20 x 1600 / 2600 -> 12.31.
    const list = await admin.finops.gpu.tokenCosts({ from, to });
    assert.equal(list.basis, "allocation");
    assert.equal(list.aggregate, "deployment");
    assert.equal(Date.parse(list.from), from.getTime());
    const d = row(list, (r) => r.deployment_id === deployment);
    assert.equal(d.cost, "20.00");
    assert.equal(d.currency, "USD");
    assert.equal(d.allocation_method, "weight");
    assert.equal(d.token_source, "usage_events");
    assert.deepEqual([d.tokens_in, d.tokens_out, d.tokens], [1600, 400, 2000]);
    assert.equal(d.output_token_weight, "2.5");
    assert.deepEqual([d.input_cost, d.output_cost], ["12.31", "7.69"]);
    assert.equal(sum([d.input_cost!, d.output_cost!]), d.cost);
    assert.equal(d.cost_per_mtok, "10000.0000");
    assert.deepEqual([d.input_cost_per_mtok, d.output_cost_per_mtok], ["7693.7500", "19225.0000"]);
    assert.equal(d.tenant_id, null);
  });

  test("per tenant: each one's share over its own tokens, with its deployments", async () => {
    const list = await admin.finops.gpu.tokenCosts({ from, to, aggregate: "tenant" });
    assert.equal(list.aggregate, "tenant");
    const a = row(list, (r) => r.tenant_id === tenantA);
    const b = row(list, (r) => r.tenant_id === tenantB);
    assert.deepEqual([a.cost, b.cost], ["14.00", "6.00"]);
    assert.equal(sum([a.cost, b.cost]), "20.00");
    assert.deepEqual([a.input_cost, a.output_cost, b.input_cost, b.output_cost], ["7.00", "7.00", "6.00", "0.00"]);
    assert.deepEqual([a.cost_per_mtok, b.cost_per_mtok], ["10000.0000", "10000.0000"]);
    assert.equal(b.output_cost_per_mtok, null, "no output token: no rate");
    assert.deepEqual(a.deployments?.map((x) => [x.deployment_id, x.cost]), [[deployment, "14.00"]]);

    // A tenant's view: its share only, on every aggregate.
    const scoped = admin.withOptions({ tenant: tenantB });
    for (const aggregate of ["deployment", "tenant", "model"] as const) {
      const mine = await scoped.finops.gpu.tokenCosts({ from, to, aggregate });
      assert.deepEqual(mine.items.map((r) => r.cost), ["6.00"], aggregate);
      assert.ok(!JSON.stringify(mine).includes(tenantA), aggregate);
    }
  });

  test("the usage basis keeps the busy GPU-seconds only (82 %)", async () => {
    const list = await admin.finops.gpu.tokenCosts({ from: from.toISOString(), to: to.toISOString(), basis: "usage" });
    assert.equal(list.basis, "usage");
    assert.equal(row(list, (r) => r.deployment_id === deployment).cost, "16.40");
  });

  test("bad parameters: a ValidationError naming them", async () => {
    const bad = { from, to, basis: "list", aggregate: "pod" } as unknown as Parameters<typeof admin.finops.gpu.tokenCosts>[0];
    await assert.rejects(admin.finops.gpu.tokenCosts(bad), (e: unknown) => {
      assert.ok(e instanceof ValidationError);
      assert.deepEqual(e.fields, ["basis", "aggregate"]);
      return true;
    });
  });
});

describe("finops.gpu.allocationSeries", () => {
  test("step=hour: two steps of 10.00 that sum to the period", async () => {
    const series: AllocationSeries = await admin.finops.gpu.allocationSeries({ from, to, step: "hour" });
    assert.equal(series.step, "hour");
    assert.equal(series.steps.length, 2);
    assert.deepEqual(series.steps.map((s) => Date.parse(s.from)), [from.getTime(), from.getTime() + HOUR]);
    assert.deepEqual(series.steps.map((s) => s.totals.map((t) => [t.currency, t.cost])), [[["USD", "10.00"]], [["USD", "10.00"]]]);
    assert.deepEqual(series.steps.map((s) => s.deployments.find((d) => d.deployment_id === deployment)?.cost), ["10.00", "10.00"]);
    assert.deepEqual(series.steps.map((s) => s.tokens), [1000, 1000]);
    // 10.00 over 1,000 tokens in each hour, per million tokens.
    assert.deepEqual(
      series.steps.map((s) => s.deployments.find((d) => d.deployment_id === deployment)?.cost_per_mtok),
      ["10000.0000", "10000.0000"],
    );
    for (const col of ["cost", "allocated", "unallocated"] as const) {
      assert.equal(sum(series.steps.map((s) => s.totals[0]![col])), series.totals[0]![col], col);
    }
    assert.equal(series.totals[0]!.cost, "20.00");
    assert.equal(series.tokens, 2000);
    const whole = await admin.finops.gpu.allocation({ from, to });
    assert.equal(whole.deployments.find((d) => d.deployment_id === deployment)?.cost, series.totals[0]!.cost);

    // A tenant's view: its share in every step (3.00 each for B), its own tokens; the default step is a day.
    const mine = await admin.withOptions({ tenant: tenantB }).finops.gpu.allocationSeries({ from, to, step: "hour" });
    assert.deepEqual(mine.steps.map((s) => s.totals[0]?.cost), ["3.00", "3.00"]);
    assert.deepEqual(mine.steps.map((s) => s.deployments[0]?.cost_per_mtok), ["10000.0000", "10000.0000"]);
    assert.equal(mine.tokens, 600);
    const daily = await admin.finops.gpu.allocationSeries({ from, to });
    assert.equal(daily.step, "day");
    assert.equal(sum(daily.steps.flatMap((s) => s.totals.map((t) => t.cost))), "20.00");

    await assert.rejects(
      admin.finops.gpu.allocationSeries({ from, to, step: "minute" as "hour" }),
      (e: unknown) => e instanceof ValidationError && e.fields.join() === "step",
    );
  });
});

describe("vLLM counters", () => {
  test("a sampler posts them without a tenant: they measure the split, never weigh the tenants", async () => {
    const key = await admin.auth.apiKeys.create({ role: "sampler" });
    const sampler = new EnterpriseAI({ baseUrl: server.url, apiKey: key.key, maxRetries: 0 });
    const counters: UsageEventInput = {
      usage_type: "llm_tokens",
      source: "vllm",
      occurred_at: new Date(from.getTime() + 30 * 60_000),
      deployment_id: deployment,
      model: { provider: "vllm", name: LLAMA },
      units: { tokens_in: 10000, tokens_out: 2000, cached_tokens_in: 4000, prefill_seconds: 30, decode_seconds: 90, requests: 40 },
    };
    assert.equal(counters.tenant_id, undefined);
    assert.equal((await sampler.usage.events({ events: [counters] })).accepted, 1);

    const d = row(await admin.finops.gpu.tokenCosts({ from, to }), (r) => r.deployment_id === deployment);
    assert.deepEqual([d.token_source, d.allocation_method, d.model], ["vllm", "compute_time", LLAMA]);
    assert.deepEqual([d.tokens, d.effective_tokens_in, d.cached_tokens_in], [12000, 6000, 4000]);
    assert.deepEqual([d.cost, d.input_cost, d.output_cost, d.cost_per_mtok], ["20.00", "5.00", "15.00", "1666.6667"]);
    assert.equal(d.output_token_weight, "9");
    const a = row(await admin.finops.gpu.tokenCosts({ from, to, aggregate: "tenant" }), (r) => r.tenant_id === tenantA);
    assert.deepEqual([a.cost, a.input_cost, a.output_cost], ["14.00", "2.00", "12.00"]);
    const m = row(await admin.finops.gpu.tokenCosts({ from, to, aggregate: "model" }), (r) => r.model === LLAMA);
    assert.deepEqual([m.deployment_id, m.cost], [null, "20.00"]);

    // A sampler posts nothing that names a tenant.
    await assert.rejects(
      sampler.usage.events({ events: [{ ...counters, source: "gateway", tenant_id: tenantA }] }),
      PermissionDeniedError,
    );
  });
});

describe("allocationPolicies: output_token_weight", () => {
  test("given as a decimal string, kept exact, carried over by a supersede", async () => {
    const created = await admin.finops.allocationPolicies.create({
      name: "weighted",
      deployment_pattern: uniq("otw"),
      gpu_hourly_cost: "1",
      output_token_weight: "4.25",
    });
    const change = await admin.finops.allocationPolicies.supersede(created.id, { gpu_hourly_cost: "2" });
    assert.deepEqual([change.closed.output_token_weight, change.opened.output_token_weight], ["4.25", "4.25"]);
    const reweighed = await admin.finops.allocationPolicies.supersede(change.opened.id, { output_token_weight: "3" });
    assert.equal(reweighed.opened.output_token_weight, "3");
    await assert.rejects(
      admin.finops.allocationPolicies.create({ name: "light", gpu_hourly_cost: "1", output_token_weight: "0.05" }),
      (e: unknown) => e instanceof ValidationError && e.fields.join() === "output_token_weight",
    );
  });
});
