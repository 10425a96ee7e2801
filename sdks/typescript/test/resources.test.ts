/** Every call of the SDK against a real server, and the client's own behaviour (options, key hygiene). */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "node:util";
import { after, before, describe, test } from "node:test";
import {
  AuthenticationError,
  EnterpriseAI,
  VERSION,
  ValidationError,
  type AllocationFindingCode,
  type GpuSample,
  type GpuSampleInput,
  type ShareMethod,
  type UsageEventInput,
} from "@enterprise-ai/sdk";
import { WORKED_EXAMPLE_POLICY, alignedPast, hourStart, sample, series, uniq, usageEvent } from "./helpers/data.js";
import { countingFetch } from "./helpers/proxy.js";
import { PKG_ROOT, REPO_ROOT } from "./helpers/paths.js";
import { startServer, type TestServer } from "./helpers/server.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let server: TestServer;
let admin: EnterpriseAI;
let acmeId: string;
const ACME = uniq("acme");

before(async () => {
  server = await startServer();
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  acmeId = (await admin.tenants.create({ slug: ACME, name: "Acme Corp" })).id;
});
after(async () => {
  await server?.stop();
});

describe("package", () => {
  test("VERSION is package.json's version", () => {
    const pkg = JSON.parse(readFileSync(join(PKG_ROOT, "package.json"), "utf8")) as { version: string };
    assert.equal(VERSION, pkg.version);
    assert.equal(VERSION, "0.1.0");
  });
});

describe("tenants", () => {
  test("create, list, get by slug and by id", async () => {
    const slug = uniq("globex");
    const id = "3c1d7b2a-5e4f-4a6b-8c9d-0e1f2a3b4c5d";
    const t = await admin.tenants.create({ slug, name: "Globex", id });
    assert.deepEqual(t, { id, slug, name: "Globex" });
    const list = await admin.tenants.list();
    assert.ok(list.items.some((x) => x.slug === slug));
    assert.ok(list.items.some((x) => x.slug === ACME));
    assert.deepEqual(await admin.tenants.get(slug), t);
    assert.deepEqual(await admin.tenants.get(id), t);
    // Signed in to a tenant, a platform key lists only that one.
    const scoped = await admin.withOptions({ tenant: slug }).tenants.list();
    assert.deepEqual(scoped.items.map((x) => x.slug), [slug]);
  });
});

describe("auth", () => {
  test("whoami, with and without a tenant", async () => {
    const me = await admin.auth.whoami();
    assert.equal(me.role, "platform_admin");
    assert.equal(me.tenant_id, null);
    assert.equal(me.acting_tenant, null);
    assert.match(me.key_id, /^key_\d+$/);
    const acting = await admin.auth.whoami({ tenant: ACME });
    assert.equal(acting.acting_tenant?.slug, ACME);
    assert.equal(acting.acting_tenant?.id, acmeId);
  });

  test("apiKeys: create, list (no secret), rotate, revoke", async () => {
    const created = await admin.auth.apiKeys.create({ role: "finops", tenant_id: acmeId, name: "finops-acme" });
    assert.match(created.id, /^key_\d+$/);
    assert.match(created.key, /^eai_live_/);
    assert.equal(created.role, "finops");
    assert.equal(created.tenant_id, acmeId);
    assert.equal(created.status, "active");

    const finops = new EnterpriseAI({ baseUrl: server.url, apiKey: created.key, maxRetries: 0 });
    const me = await finops.auth.whoami();
    assert.equal(me.key_id, created.id);
    assert.equal(me.tenant?.slug, ACME);

    const list = await admin.auth.apiKeys.list();
    const listed = list.items.find((k) => k.id === created.id);
    assert.ok(listed);
    assert.equal("key" in listed, false, "a listed key never carries its secret");
    assert.equal(JSON.stringify(list).includes(created.key), false);

    const rotated = await admin.auth.apiKeys.rotate(created.id, { grace_seconds: 0 });
    assert.equal(rotated.id, created.id);
    assert.notEqual(rotated.key, created.key);
    assert.ok(rotated.rotated_at);
    await assert.rejects(finops.auth.whoami(), AuthenticationError);
    const next = new EnterpriseAI({ baseUrl: server.url, apiKey: rotated.key, maxRetries: 0 });
    assert.equal((await next.auth.whoami()).key_id, created.id);

    const revoked = await admin.auth.apiKeys.revoke(created.id);
    assert.equal(revoked.status, "revoked");
    assert.ok(revoked.revoked_at);
    await assert.rejects(next.auth.whoami(), AuthenticationError);
    // Idempotent.
    assert.equal((await admin.auth.apiKeys.revoke(created.id)).status, "revoked");
  });
});

describe("finops", () => {
  test("allocationPolicies: create, list, supersede, disable (money stays strings)", async () => {
    const created = await admin.finops.allocationPolicies.create({ ...WORKED_EXAMPLE_POLICY, name: uniq("policy") });
    assert.match(created.id, /^alp_\d+$/);
    assert.equal(created.status, "active");

    const list = await admin.finops.allocationPolicies.list();
    const stored = list.items.find((p) => p.id === created.id);
    assert.ok(stored);
    assert.equal(stored.currency, "EUR");
    for (const field of ["gpu_hourly_cost", "overhead_pct", "energy_kwh_price", "pue", "storage_gb_month_price"] as const) {
      assert.equal(typeof stored[field], "string", field);
    }
    assert.match(stored.gpu_hourly_cost, /^2\.10*$/);

    const change = await admin.finops.allocationPolicies.supersede(created.id, { gpu_hourly_cost: "2.30" });
    assert.equal(change.closed.id, created.id);
    assert.equal(change.closed.status, "closed");
    assert.ok(change.closed.effective_to);
    assert.match(change.opened.gpu_hourly_cost, /^2\.30*$/);
    assert.equal(change.opened.currency, "EUR");

    const disabled = await admin.finops.allocationPolicies.disable(change.opened.id);
    assert.equal(disabled.closed.id, change.opened.id);
    assert.equal(disabled.opened.enabled, false);
    assert.equal(disabled.opened.status, "disabled");

    // A tenant reader lists them too.
    const again = await admin.finops.allocationPolicies.list({ tenant: ACME });
    assert.ok(again.items.some((p) => p.id === disabled.opened.id));
  });

  test("ingestSamples stamps missing timestamps once, without touching the caller's objects", async () => {
    const deployment = uniq("stamp");
    const given: GpuSampleInput[] = [
      sample({ gpu: "GPU-stamp-1", deployment }),
      sample({ gpu: "GPU-stamp-2", deployment }),
      { ...sample({ gpu: "GPU-stamp-3", deployment }), timestamp: alignedPast(60_000) },
    ];
    const snapshot = structuredClone(given);
    const counting = countingFetch();
    const client = admin.withOptions({ fetch: counting.fetch });
    const before = Date.now();
    const r = await client.finops.gpu.ingestSamples({ samples: given });
    assert.deepEqual(r, { accepted: 3, duplicates: 0 });
    assert.deepEqual(given, snapshot, "the caller's array and objects are unchanged");
    assert.equal(counting.calls.length, 1);
    const sent = JSON.parse(counting.calls[0]!.body!) as { samples: { timestamp: string }[] };
    const [a, b, c] = sent.samples;
    assert.match(a!.timestamp, ISO_MS_Z);
    assert.equal(a!.timestamp, b!.timestamp, "one stamp per call");
    assert.ok(Date.parse(a!.timestamp) >= before - 1 && Date.parse(a!.timestamp) <= Date.now());
    assert.equal(c!.timestamp, (given[2]!.timestamp as Date).toISOString(), "a Date is sent as its ISO instant");
  });

  test("an empty list sends nothing", async () => {
    const counting = countingFetch();
    const client = admin.withOptions({ fetch: counting.fetch });
    assert.deepEqual(await client.finops.gpu.ingestSamples({ samples: [] }), { accepted: 0, duplicates: 0 });
    assert.deepEqual(await client.usage.events({ events: [] }), { accepted: 0 });
    assert.equal(counting.calls.length, 0);
  });

  test("allocation with date strings, RFC 3339 strings, Dates and the default period", async () => {
    const deployment = uniq("alloc");
    const hour = hourStart(2);
    await admin.finops.gpu.ingestSamples({ samples: series("GPU-alloc", deployment, new Date(hour.getTime() + 600_000), 40) });
    const day = hour.toISOString().slice(0, 10);
    const byDate = await admin.finops.gpu.allocation({ from: day, to: day });
    assert.equal(byDate.from, `${day}T00:00:00Z`);
    assert.equal(Date.parse(byDate.to) - Date.parse(byDate.from), 86_400_000, "a date `to` includes its whole day");
    const byDates = await admin.finops.gpu.allocation({ from: hour, to: new Date(hour.getTime() + 3_600_000) });
    assert.equal(Date.parse(byDates.from), hour.getTime());
    assert.equal(Date.parse(byDates.to), hour.getTime() + 3_600_000);
    const byRfc = await admin.finops.gpu.allocation({ from: hour.toISOString(), to: new Date(hour.getTime() + 3_600_000).toISOString() });
    assert.deepEqual(byRfc.deployments, byDates.deployments);
    const dep = byDates.deployments.find((d) => d.deployment_id === deployment);
    assert.ok(dep, JSON.stringify(byDates));
    assert.equal(dep.samples, 40);
    assert.equal(typeof dep.gpu_hours, "number");
    assert.equal(typeof dep.cost, "string");
    const last30 = await admin.finops.gpu.allocation();
    assert.ok(last30.deployments.some((d) => d.deployment_id === deployment));
    for (const key of ["items", "deployments", "tenants", "daily", "gaps", "findings"] as const) {
      assert.ok(Array.isArray(last30[key]), key);
    }
  });

  test("share_method equal: two pods split a GPU, the allocation reports equal_gpu_shares; an unknown method is refused", async () => {
    const deployment = uniq("equal");
    const gpu = uniq("GPU-eq");
    const hour = hourStart(3);
    const end = new Date(hour.getTime() + 15_000);
    const half = (gpuUuid: string, pod: string, method: ShareMethod): GpuSample => ({
      ...sample({ gpu: gpuUuid, deployment, end }),
      pod,
      gpu_fraction: 0.5,
      share_method: method,
    });
    const samples = [half(`${gpu}/shared/eai-inference/${deployment}-b`, `${deployment}-b`, "equal"), half(gpu, `${deployment}-a`, "equal")];
    assert.deepEqual(await admin.finops.gpu.ingestSamples({ samples }), { accepted: 2, duplicates: 0 });

    const a = await admin.finops.gpu.allocation({ from: hour, to: new Date(hour.getTime() + 3_600_000) });
    const code: AllocationFindingCode = "equal_gpu_shares";
    const found = a.findings.filter((f) => f.code === code && f.message.includes(deployment));
    assert.equal(found.length, 1, JSON.stringify(a.findings));

    const bad = { ...half(uniq("GPU-eq"), `${deployment}-c`, "equal"), share_method: "half" } as unknown as GpuSample;
    const err = await admin.finops.gpu.ingestSamples({ samples: [bad] }).then(
      () => assert.fail("share_method half was accepted"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ValidationError, String(err));
    assert.deepEqual(err.fields, ["share_method"]);
  });
});

describe("providers", () => {
  test("catalog lists the deployments seen through samples", async () => {
    const deployment = uniq("catalog");
    await admin.finops.gpu.ingestSamples({ samples: series("GPU-cat", deployment, alignedPast(120_000), 2) });
    const catalog = await admin.providers.catalog();
    const entry = catalog.items.find((p) => p.base_url.includes(deployment));
    assert.ok(entry, JSON.stringify(catalog));
    assert.equal(entry.local, true);
    assert.equal(entry.discovery, "samples");
    assert.equal(entry.deployment_id, deployment);
    assert.deepEqual(entry.models, []);
    assert.match(entry.provider_id, /^[0-9a-f-]{36}$/);
  });
});

describe("usage", () => {
  test("events get a UUID and schema_version once; the caller's objects are unchanged", async () => {
    const at = alignedPast(300_000);
    const given: UsageEventInput[] = [
      usageEvent({ deployment: "shared-llm", at, tenantId: acmeId }),
      { ...usageEvent({ deployment: "shared-llm", at, tenantId: acmeId }), occurred_at: at },
      { ...usageEvent({ deployment: "shared-llm", at, tenantId: acmeId }), event_id: "0b8c5f0e-3f7a-4d2b-9c1e-5a6b7c8d9e01", schema_version: "1.0" },
    ];
    const snapshot = structuredClone(given);
    const counting = countingFetch();
    const r = await admin.withOptions({ fetch: counting.fetch }).usage.events({ events: given });
    assert.deepEqual(r, { accepted: 3 });
    assert.deepEqual(given, snapshot);
    const sent = JSON.parse(counting.calls[0]!.body!) as { events: { event_id: string; schema_version: string; occurred_at: string }[] };
    assert.match(sent.events[0]!.event_id, UUID);
    assert.match(sent.events[1]!.event_id, UUID);
    assert.notEqual(sent.events[0]!.event_id, sent.events[1]!.event_id);
    assert.equal(sent.events[2]!.event_id, "0b8c5f0e-3f7a-4d2b-9c1e-5a6b7c8d9e01");
    assert.ok(sent.events.every((e) => e.schema_version === "1.0"));
    assert.equal(sent.events[1]!.occurred_at, at.toISOString());
  });

  test("a tenant key sends events without tenant_id", async () => {
    const dev = await admin.auth.apiKeys.create({ role: "developer", tenant_id: acmeId });
    const client = new EnterpriseAI({ baseUrl: server.url, apiKey: dev.key });
    const r = await client.usage.events({ events: [usageEvent({ deployment: "shared-llm", at: alignedPast(60_000) })] });
    assert.deepEqual(r, { accepted: 1 });
  });
});

describe("audit", () => {
  test("events, paging, iterate and head agree", async () => {
    const page = await admin.audit.events();
    assert.ok(page.items.length > 0);
    const first = page.items[0]!;
    assert.equal(first.seq, 1);
    assert.match(first.hash, /^[0-9a-f]{64}$/);
    assert.equal(first.prev_hash, "0".repeat(64));

    const two = await admin.audit.events({ after: 1, limit: 2 });
    assert.deepEqual(two.items.map((e) => e.seq), [2, 3]);
    assert.equal(two.items[0]!.prev_hash, first.hash, "a chain");

    const all = [];
    for await (const e of admin.audit.iterate({ pageSize: 3 })) all.push(e);
    assert.deepEqual(all.map((e) => e.seq), all.map((_, i) => i + 1), "no hole, oldest first");
    const head = await admin.audit.head();
    const last = all[all.length - 1]!;
    assert.ok(head.seq >= last.seq);
    if (head.seq === last.seq) assert.equal(head.hash, last.hash);
    assert.ok(all.some((e) => e.action === "tenant.create"));
    assert.ok(!JSON.stringify(all).includes(server.adminKey), "the audit trail never holds a key");
  });
});

describe("contract conformance", () => {
  // The server audits usage_reporter calls with actor_role "usage_reporter": the contract's enum lists it.
  test(
    "every audit actor_role the server writes is in the contract's enum",
    async () => {
      const contract = JSON.parse(readFileSync(join(REPO_ROOT, "contracts/v1/openapi.json"), "utf8")) as {
        components: { schemas: { AuditEvent: { properties: { actor_role: { enum: (string | null)[] } } } } };
      };
      const allowed = new Set(contract.components.schemas.AuditEvent.properties.actor_role.enum);
      const reporter = await admin.auth.apiKeys.create({ role: "usage_reporter" });
      const client = new EnterpriseAI({ baseUrl: server.url, apiKey: reporter.key });
      await client.usage.events({ events: [usageEvent({ deployment: "shared-llm", at: alignedPast(60_000), tenantId: acmeId })] });
      const seen = new Set<string | null>();
      for await (const e of admin.audit.iterate()) seen.add(e.actor_role);
      assert.ok(seen.has("usage_reporter"), "the server audits the usage_reporter's ingest");
      assert.deepEqual([...seen].filter((r) => !allowed.has(r)), []);
    },
  );
});

describe("client", () => {
  test("toJSON, inspect and errors never reveal the API key", async () => {
    const secret = "eai_live_TopSecretKeyValue_0123456789";
    const client = new EnterpriseAI({ baseUrl: server.url, apiKey: secret, tenant: ACME, locale: "fr", maxRetries: 0 });
    for (const text of [
      JSON.stringify(client),
      inspect(client, { depth: 10, showHidden: true }),
      inspect(client.finops, { depth: 10, showHidden: true }),
      inspect(client.usage.emitter({ flushIntervalMs: 0 }), { depth: 10, showHidden: true }),
      String(client),
      Object.keys(client).join(","),
    ]) {
      assert.ok(!text.includes(secret), text);
      assert.ok(!text.includes("TopSecret"), text);
    }
    assert.deepEqual(JSON.parse(JSON.stringify(client)), {
      baseUrl: server.url,
      apiKey: "[redacted]",
      tenant: ACME,
      locale: "fr",
      timeoutMs: 30_000,
      maxRetries: 0,
      maxBatchSize: 5000,
      splitOnPayloadTooLarge: true,
      logLevel: client.logLevel,
      sdkVersion: VERSION,
    });
    const err = await client.auth.whoami().then(
      () => assert.fail("a bad key must fail"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof AuthenticationError);
    for (const text of [JSON.stringify(err), inspect(err, { depth: 10, showHidden: true }), String(err), err.stack ?? ""]) {
      assert.ok(!text.includes("TopSecret"), text);
    }
  });

  test("the API key comes from EAI_API_KEY when not given, and is required", async () => {
    const saved = process.env.EAI_API_KEY;
    try {
      delete process.env.EAI_API_KEY;
      assert.throws(() => new EnterpriseAI({ baseUrl: server.url }), (e: unknown) => {
        assert.ok(e instanceof TypeError);
        assert.match(e.message, /EAI_API_KEY/);
        return true;
      });
      process.env.EAI_API_KEY = server.adminKey;
      const fromEnv = new EnterpriseAI({ baseUrl: server.url });
      assert.equal((await fromEnv.auth.whoami()).role, "platform_admin");
    } finally {
      if (saved === undefined) delete process.env.EAI_API_KEY;
      else process.env.EAI_API_KEY = saved;
    }
    assert.throws(() => new EnterpriseAI({ apiKey: server.adminKey, baseUrl: "not a url" }), TypeError);
    assert.throws(() => new EnterpriseAI({ apiKey: server.adminKey, baseUrl: server.url, maxRetries: -1 }), TypeError);
  });

  test("base URL with a trailing slash, per-call options and the raw request", async () => {
    const client = new EnterpriseAI({ baseUrl: `${server.url}/`, apiKey: server.adminKey });
    assert.equal(client.baseUrl, server.url);
    const raw = await client.request<{ role: string }>("GET", "/v1/auth/whoami");
    assert.equal(raw.role, "platform_admin");
    const counting = countingFetch();
    const c2 = client.withOptions({ fetch: counting.fetch, tenant: ACME, locale: "fr" });
    await c2.auth.whoami({ requestId: "sdk-test-request-1" });
    await c2.auth.whoami({ tenant: null, locale: null });
    assert.equal(counting.calls.length, 2);
    const [one, two] = counting.calls;
    assert.equal(one!.headers["X-EAI-Tenant"], ACME);
    assert.equal(one!.headers["Accept-Language"], "fr");
    assert.equal(one!.headers["X-Request-Id"], "sdk-test-request-1");
    assert.equal(one!.headers["Authorization"], `Bearer ${server.adminKey}`);
    assert.equal(two!.headers["X-EAI-Tenant"], undefined, "tenant: null drops the client's tenant");
    assert.equal(two!.headers["Accept-Language"], undefined);
    assert.equal(c2.tenant, ACME);
    assert.equal(client.tenant, undefined, "withOptions does not change the original");
  });
});
