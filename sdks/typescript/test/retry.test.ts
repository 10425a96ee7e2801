/**
 * Retries: a fault proxy in front of the real server answers 503 / 429 (Retry-After) / 500 / nothing to the
 * first requests, then forwards. Retried samples and events are counted once by the real server.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  EnterpriseAI,
  NotFoundError,
  RateLimitError,
  ServiceUnavailableError,
  ValidationError,
} from "@enterprise-ai/sdk";
import { alignedPast, sample, series, uniq } from "./helpers/data.js";
import { countingFetch, startFaultProxy, type Fault, type FaultProxy } from "./helpers/proxy.js";
import { startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;
let limited: TestServer;
let admin: EnterpriseAI;

before(async () => {
  [server, limited] = await Promise.all([startServer(), startServer({ EAI_RATE_LIMIT_PER_KEY: "1" })]);
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
});
after(async () => {
  await Promise.all([server?.stop(), limited?.stop()]);
});

/** A proxy whose first `count` requests get `fault`; the rest are forwarded. */
async function failFirst(count: number, fault: Fault): Promise<FaultProxy> {
  return startFaultProxy(server.url, (n) => (n <= count ? fault : undefined));
}

/** The number of samples the server counted for a deployment over the last day. */
async function storedSamples(deployment: string): Promise<number> {
  const view = await admin.finops.gpu.allocation({ from: new Date(Date.now() - 86_400_000), to: new Date(Date.now() + 60_000) });
  return view.deployments.find((d) => d.deployment_id === deployment)?.samples ?? 0;
}

const fast = { maxRetries: 3, retryBaseDelayMs: 20, retryMaxDelayMs: 100 };

describe("retried", () => {
  test("503 to the first two requests, then forwarded: success on the third attempt", async () => {
    const proxy = await failFirst(2, { status: 503 });
    try {
      const deployment = uniq("retry503");
      const samples = series("GPU-r503", deployment, alignedPast(60_000), 20);
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, ...fast });
      const r = await client.finops.gpu.ingestSamples({ samples });
      assert.deepEqual(r, { accepted: 20, duplicates: 0 });
      assert.deepEqual(proxy.requests.map((q) => q.status), [503, 503, 200]);
      assert.equal(proxy.requests[0]!.body, proxy.requests[2]!.body, "the same request each time");
      assert.equal(await storedSamples(deployment), 20);
    } finally {
      await proxy.close();
    }
  });

  test("a lost answer (stored, then 503) is retried with its key, answered once more, its samples counted once", async () => {
    const proxy = await failFirst(1, { status: 503, forwardFirst: true });
    try {
      const deployment = uniq("lost");
      // No timestamps: the SDK stamps them once, so the retry carries the same dedup keys.
      const samples = Array.from({ length: 5 }, (_, i) => sample({ gpu: `GPU-lost-${i}`, deployment }));
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, ...fast });
      const r = await client.finops.gpu.ingestSamples({ samples });
      // The retry carries the same Idempotency-Key: the server answers the first answer again.
      assert.deepEqual(r, { accepted: 5, duplicates: 0 }, "the first answer, replayed");
      assert.equal(proxy.requests.length, 2);
      assert.equal(proxy.requests[0]!.body, proxy.requests[1]!.body, "same timestamps on the retry");
      assert.ok(proxy.requests[0]!.headers["idempotency-key"]);
      assert.equal(proxy.requests[1]!.headers["idempotency-key"], proxy.requests[0]!.headers["idempotency-key"]);
      assert.equal(await storedSamples(deployment), 5, "counted once");
    } finally {
      await proxy.close();
    }
  });

  test("429 with Retry-After: 1 is honoured, then forwarded", async () => {
    const proxy = await failFirst(1, { status: 429, retryAfter: 1 });
    try {
      const deployment = uniq("retry429");
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, ...fast });
      const started = Date.now();
      const r = await client.finops.gpu.ingestSamples({ samples: series("GPU-r429", deployment, alignedPast(60_000), 3) });
      const elapsed = Date.now() - started;
      assert.deepEqual(r, { accepted: 3, duplicates: 0 });
      assert.deepEqual(proxy.requests.map((q) => q.status), [429, 200]);
      assert.ok(elapsed >= 950, `waited ${elapsed} ms for Retry-After: 1`);
      assert.equal(await storedSamples(deployment), 3);
    } finally {
      await proxy.close();
    }
  });

  test("a Retry-After above maxRetryAfterMs is not waited for: the error is raised at once", async () => {
    const proxy = await failFirst(1, { status: 429, retryAfter: 3600 });
    try {
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, ...fast, maxRetryAfterMs: 200 });
      const started = Date.now();
      const e = await client.auth.whoami().catch((x: unknown) => x);
      assert.ok(e instanceof RateLimitError);
      assert.equal(e.retryAfter, 3600);
      assert.equal(e.attempts, 1);
      assert.ok(Date.now() - started < 3_000);
      assert.equal(proxy.requests.length, 1);
    } finally {
      await proxy.close();
    }
  });

  test("the real server's 429 (EAI_RATE_LIMIT_PER_KEY=1) is retried until it passes", async () => {
    const counting = countingFetch();
    const client = new EnterpriseAI({ baseUrl: limited.url, apiKey: limited.adminKey, maxRetries: 5, fetch: counting.fetch });
    for (let i = 0; i < 3; i++) assert.equal((await client.auth.whoami()).role, "platform_admin");
    const statuses = counting.calls.map((c) => c.status);
    assert.ok(statuses.includes(429), `some calls were limited: ${statuses.join(",")}`);
    assert.equal(statuses.filter((s) => s === 200).length, 3);
  });

  test("a usage event batch with a lost answer is resent with the same ids", async () => {
    const tenant = await admin.tenants.create({ slug: uniq("usage-retry"), name: "Usage retry" });
    const proxy = await failFirst(1, { status: 503, forwardFirst: true });
    try {
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, ...fast });
      const events = Array.from({ length: 4 }, () => ({
        tenant_id: tenant.id,
        usage_type: "llm_tokens",
        source: "gateway",
        occurred_at: alignedPast(60_000),
        units: { tokens_in: 10 },
      }));
      assert.deepEqual(await client.usage.events({ events }), { accepted: 4 });
      assert.equal(proxy.requests.length, 2);
      assert.equal(proxy.requests[0]!.body, proxy.requests[1]!.body);
    } finally {
      await proxy.close();
    }
  });

  test("a timeout of an idempotent call is retried", async () => {
    const proxy = await failFirst(1, { delayMs: 1_000 });
    try {
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, ...fast, timeoutMs: 250 });
      assert.equal((await client.auth.whoami()).role, "platform_admin");
      assert.equal(proxy.requests.length, 2);
    } finally {
      await proxy.close();
    }
  });

  test("a creation is retried on 503 (refused before any work)", async () => {
    const proxy = await failFirst(1, { status: 503 });
    try {
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, ...fast });
      const slug = uniq("created");
      assert.equal((await client.tenants.create({ slug, name: "Created" })).slug, slug);
      assert.deepEqual(proxy.requests.map((q) => q.status), [503, 201]);
    } finally {
      await proxy.close();
    }
  });
});

describe("not retried", () => {
  test("up to maxRetries, then the last error with its attempt count", async () => {
    const proxy = await failFirst(100, { status: 503 });
    try {
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, ...fast, maxRetries: 2 });
      const e = await client.auth.whoami().catch((x: unknown) => x);
      assert.ok(e instanceof ServiceUnavailableError);
      assert.equal(e.attempts, 3);
      assert.equal(proxy.requests.length, 3);
    } finally {
      await proxy.close();
    }
  });

  test("4xx other than 429: one attempt (422, 404)", async () => {
    const proxy = await startFaultProxy(server.url);
    try {
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, ...fast });
      const bad = { ...sample({ gpu: "GPU-bad", deployment: "bad", end: alignedPast(60_000) }), power_w: -1 };
      await assert.rejects(client.finops.gpu.ingestSamples({ samples: [bad] }), ValidationError);
      await assert.rejects(client.tenants.get("nobody-here"), NotFoundError);
      assert.equal(proxy.requests.length, 2);
    } finally {
      await proxy.close();
    }
  });

  test("a creation after a 500 is retried with the same Idempotency-Key; two calls have two keys", async () => {
    const proxy = await failFirst(2, { status: 500 });
    try {
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, ...fast });
      const slug = uniq("once");
      assert.equal((await client.tenants.create({ slug, name: "Once" })).slug, slug);
      assert.deepEqual(proxy.requests.map((q) => q.status), [500, 500, 201]);
      const keys = proxy.requests.map((q) => q.headers["idempotency-key"]);
      assert.match(String(keys[0]), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "a UUID v4");
      assert.deepEqual(keys, [keys[0], keys[0], keys[0]]);
      await client.tenants.create({ slug: uniq("twice"), name: "Twice" });
      assert.notEqual(proxy.requests[3]!.headers["idempotency-key"], keys[0], "a fresh key per call");
      assert.equal(proxy.requests[3]!.method, "POST");
      const me = await client.auth.whoami();
      assert.equal(me.role, "platform_admin");
      assert.equal(proxy.requests[4]!.headers["idempotency-key"], undefined, "a GET carries none");
    } finally {
      await proxy.close();
    }
  });

  test("maxRetries: 0 surfaces the first 429", async () => {
    const proxy = await failFirst(1, { status: 429, retryAfter: 1 });
    try {
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, maxRetries: 0 });
      const e = await client.auth.whoami().catch((x: unknown) => x);
      assert.ok(e instanceof RateLimitError);
      assert.equal(e.retryAfter, 1);
      assert.equal(proxy.requests.length, 1);
    } finally {
      await proxy.close();
    }
  });
});
