/**
 * SPEC §13's advice against a real server of this file's own: recommendations (`finops.gpu.recommendations`), the
 * month's forecast (`finops.gpu.forecast`) and the anomalies (`finops.gpu.anomalies`).
 *
 * The recommendations' case: a deployment of the file's own on one GPU for two whole hours, 1 % busy, at a flat
 * 10 USD per GPU-hour. Each hour is idle (0.01 <= 0.05) and the GPU was idle in 2 of the 2 hours it ran
 * (1 >= 0.5): one `idle_gpus` recommendation, the GPU could go.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  EnterpriseAI,
  ValidationError,
  type Anomaly,
  type AnomalyList,
  type Forecast,
  type ForecastLine,
  type Money,
  type Recommendation,
  type RecommendationList,
} from "@enterprise-ai/sdk";
import { hourOfSamples, hourStart, uniq } from "./helpers/data.js";
import { countingFetch } from "./helpers/proxy.js";
import { equal, places, sum, toUnits } from "./helpers/money.js";
import { startServer, type TestServer } from "./helpers/server.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let server: TestServer;
let admin: EnterpriseAI;
const deployment = uniq("idle-llm");
const gpu = uniq("GPU");
let from: Date;
let to: Date;

before(async () => {
  server = await startServer();
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  from = hourStart(4);
  to = new Date(from.getTime() + 2 * HOUR);
  await admin.finops.allocationPolicies.create({
    name: "flat",
    deployment_pattern: deployment,
    currency: "USD",
    gpu_hourly_cost: 10,
    effective_from: "2020-01-01",
  });
  const samples = [...hourOfSamples(gpu, deployment, from), ...hourOfSamples(gpu, deployment, new Date(from.getTime() + HOUR))].map(
    (s) => ({ ...s, utilization: 0.01 }),
  );
  assert.equal((await admin.finops.gpu.ingestSamples({ samples })).accepted, 480);
});
after(async () => {
  await server?.stop();
});

function expectValidation(fields: string[]): (e: unknown) => boolean {
  return (e: unknown) => {
    assert.ok(e instanceof ValidationError, String(e));
    assert.equal(e.status, 422);
    assert.deepEqual(e.fields, fields);
    return true;
  };
}

/** a <= b, two decimal strings, exactly. */
function le(a: string, b: string): boolean {
  const scale = Math.max(places(a), places(b));
  return toUnits(a, scale) <= toUnits(b, scale);
}

/** The first instant of the UTC month `t` is in, `plus` months later. */
function monthStart(t: Date, plus = 0): Date {
  return new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth() + plus, 1));
}

describe("finops.gpu.recommendations", () => {
  test("the idle GPU is found and its idle hours priced", async () => {
    const recs: RecommendationList = await admin.finops.gpu.recommendations({
      from,
      to,
      idleUtilization: "0.05",
      idleShare: 0.5,
      lowUtilization: "0.3",
    });
    assert.deepEqual([recs.from, recs.to].map(Date.parse), [from.getTime(), to.getTime()]);
    const t = recs.thresholds;
    assert.ok(equal(t.idle_utilization, "0.05") && equal(t.idle_share, "0.5") && equal(t.low_utilization, "0.3"), JSON.stringify(t));
    const mine = recs.items.filter((r) => r.deployment_id === deployment);
    assert.equal(mine.length, 1, JSON.stringify(recs));
    const r = mine[0] as Recommendation;
    assert.deepEqual([r.kind, r.action, r.model, r.current_gpus, r.gpus], ["idle_gpus", "remove_gpus", "H100-80GB", 1, 1]);
    assert.deepEqual([r.mig_profile, r.gpu_fraction], [null, null]);
    assert.ok(r.message.length > 0);
    // 2 GPU-hours 1 % busy: 0.02 busy GPU-hours; the busiest hour 0.01 GPU busy; 61.2 GB of memory throughout.
    const e = r.evidence;
    assert.deepEqual(
      [e.hours, e.gpu_hours, e.busy_gpu_hours, e.utilization, e.utilization_p50, e.utilization_p95, e.peak_busy_gpus],
      [2, 2, 0.02, 0.01, 0.01, 0.01, 0.01],
    );
    assert.deepEqual([e.memory_peak_gb, e.profile_memory_gb, e.unpriced_gpu_hours], [61.2, null, 0]);
    assert.deepEqual(e.idle_gpus, [{ gpu_uuid: gpu, hours: 2, idle_hours: 2 }]);
    // Its 2 idle hours at 10 USD: 20.00 saved over the period; the period is 2 hours, not a calendar month, so a
    // month's is 20.00 x (30 x 24 h) / 2 h = 7200.00.
    assert.deepEqual(r.savings, { amount: "20.00", currency: "USD" } satisfies Money);
    assert.deepEqual(r.monthly_savings, { amount: "7200.00", currency: "USD" } satisfies Money);
    assert.equal(r.cost?.currency, "USD");
    // Largest monthly savings first (compared within a currency; the unpriced have none).
    const priced = recs.items.flatMap((x) => (x.monthly_savings ? [x.monthly_savings] : []));
    for (const currency of new Set(priced.map((m) => m.currency))) {
      const amounts = priced.filter((m) => m.currency === currency).map((m) => m.amount);
      amounts.forEach((amount, i) => assert.ok(i === 0 || le(amount, amounts[i - 1]!), JSON.stringify(amounts)));
    }
  });

  test("a tenant's view has none of a shared deployment's", async () => {
    const tenant = await admin.tenants.create({ slug: uniq("rec"), name: "Recommendations" });
    const scoped = await admin.withOptions({ tenant: tenant.id }).finops.gpu.recommendations({ from, to });
    assert.deepEqual(scoped.items.filter((r) => r.deployment_id === deployment), []);
  });

  test("a threshold out of 0..1 is a ValidationError naming it", async () => {
    await assert.rejects(admin.finops.gpu.recommendations({ from, to, idleUtilization: "1.5" }), expectValidation(["idle_utilization"]));
    await assert.rejects(admin.finops.gpu.recommendations({ from, to, idleShare: -0.1 }), expectValidation(["idle_share"]));
  });
});

describe("finops.gpu.forecast", () => {
  test("this month: spend to a midnight, the rest forecast, a tenant's lines summing to its totals", async () => {
    const now = new Date();
    const first = monthStart(now);
    const period = first.toISOString().slice(0, 7);
    const f: Forecast = await admin.finops.gpu.forecast({ period });
    assert.equal(f.period, period);
    assert.deepEqual([f.from, f.to, f.history_from].map(Date.parse), [
      first.getTime(),
      monthStart(now, 1).getTime(),
      first.getTime() - 28 * DAY,
    ]);
    const asOf = Date.parse(f.as_of);
    assert.equal(asOf % DAY, 0, "a midnight UTC");
    assert.ok(first.getTime() <= asOf && asOf <= now.getTime());
    assert.equal(f.days_left, (Date.parse(f.to) - asOf) / DAY);
    for (const line of f.lines) {
      const c = line.spent.currency;
      assert.ok([line.expected, line.low, line.high].every((m) => m.currency === c));
      assert.ok(le(line.spent.amount, line.expected.amount) && le(line.spent.amount, line.low.amount), JSON.stringify(line));
      assert.ok(le(line.low.amount, line.high.amount), JSON.stringify(line));
    }
    for (const total of f.tenants) {
      const own = f.lines.filter((l) => l.tenant_id === total.tenant_id && l.spent.currency === total.spent.currency);
      for (const k of ["spent", "expected", "low", "high"] as const) {
        assert.ok(equal(total[k].amount, sum(own.map((l: ForecastLine) => l[k].amount))), `${k} of ${total.tenant_id}`);
      }
    }
    for (const b of f.budgets) {
      assert.match(b.budget_id, /^bud_[0-9]+$/);
      for (const day of [b.exhausted_on, b.exhausted_on_high]) {
        if (day !== null) assert.ok(day >= period && day < f.to.slice(0, 10), day);
      }
    }
    // A Date names its UTC month.
    const same = await admin.finops.gpu.forecast({ period: now });
    assert.deepEqual([same.period, same.from, same.to], [f.period, f.from, f.to]);
  });

  test("a month over: its figures, the band equal to them", async () => {
    const last = monthStart(new Date(), -1);
    const past = await admin.finops.gpu.forecast({ period: last });
    assert.equal(past.period, last.toISOString().slice(0, 7));
    assert.equal(past.days_left, 0);
    assert.deepEqual([past.from, past.to, past.as_of].map(Date.parse), [last.getTime(), monthStart(last, 1).getTime(), monthStart(last, 1).getTime()]);
    for (const l of [...past.lines, ...past.tenants]) {
      assert.deepEqual([l.expected, l.low, l.high], [l.spent, l.spent, l.spent]);
    }
  });

  test("another period is a ValidationError naming period", async () => {
    await assert.rejects(admin.finops.gpu.forecast({ period: "2026-13" }), expectValidation(["period"]));
  });
});

describe("finops.gpu.anomalies", () => {
  test("a period's anomalies, newest first, each well formed", async () => {
    const end = hourStart(-1);
    const start = new Date(end.getTime() - 7 * DAY);
    const list: AnomalyList = await admin.finops.gpu.anomalies({ from: start, to: end });
    assert.deepEqual([list.from, list.to].map(Date.parse), [start.getTime(), end.getTime()]);
    const hours = list.items.map((a) => Date.parse(a.hour));
    assert.deepEqual(hours, [...hours].sort((a, b) => b - a));
    for (const a of list.items as Anomaly[]) {
      assert.match(a.id, /^anm_[0-9]+$/);
      assert.ok(start.getTime() <= Date.parse(a.hour) && Date.parse(a.hour) < end.getTime());
      assert.ok(["cost", "gpu_seconds"].includes(a.metric) && ["above", "below"].includes(a.direction));
      assert.equal(a.currency !== null, a.metric === "cost");
      assert.ok(a.baseline_hours >= 24 && a.message.length > 0);
      if (a.deviation_mads === null) assert.ok(equal(a.baseline_mad, "0"));
    }
  });

  test("a period that ends before it starts is a ValidationError naming to", async () => {
    await assert.rejects(admin.finops.gpu.anomalies({ from: to, to: from }), expectValidation(["to"]));
  });
});

describe("the queries sent", () => {
  test("thresholds as decimal strings, the period as YYYY-MM, from/to as instants", async () => {
    const counting = countingFetch();
    const client = admin.withOptions({ fetch: counting.fetch });
    // Whatever the answer, the request is what is checked here.
    await client.finops.gpu.recommendations({ from, to, idleUtilization: 0.05, idleShare: "0.5" }).catch(() => undefined);
    await client.finops.gpu.forecast({ period: new Date(Date.UTC(2026, 10, 30, 23, 59)) }).catch(() => undefined);
    await client.finops.gpu.forecast().catch(() => undefined);
    await client.finops.gpu.anomalies({ from: "2026-11-01", to: "2026-11-07" }).catch(() => undefined);
    const urls = counting.calls.map((c) => new URL(c.url));
    assert.deepEqual(
      urls.map((u) => [lastSegment(u.pathname), Object.fromEntries(u.searchParams)]),
      [
        ["recommendations", { from: from.toISOString(), to: to.toISOString(), idle_utilization: "0.05", idle_share: "0.5" }],
        ["forecast", { period: "2026-11" }],
        ["forecast", {}],
        ["anomalies", { from: "2026-11-01", to: "2026-11-07" }],
      ],
    );
    assert.ok(counting.calls.every((call) => call.method === "GET"));
    await assert.rejects(client.finops.gpu.forecast({ period: new Date(Number.NaN) }), TypeError);
    assert.equal(counting.calls.length, 4, "nothing sent");
  });
});

/** The last segment of a path. */
function lastSegment(pathname: string): string {
  return pathname.slice(pathname.lastIndexOf("/") + 1);
}
