/**
 * Batching: 25,000 samples go in 5 requests of 5,000 and are counted once; a server with EAI_MAX_BATCH=3000
 * answers 413 to a 5,000 batch, which the SDK halves and resends; with splitting off, the 413 surfaces.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { EnterpriseAI, PayloadTooLargeError, requestIdOf } from "@enterprise-ai/sdk";
import { alignedPast, series, uniq } from "./helpers/data.js";
import { countingFetch } from "./helpers/proxy.js";
import { startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;
let small: TestServer;

before(async () => {
  [server, small] = await Promise.all([
    startServer(),
    startServer({ EAI_MAX_BATCH: "3000", EAI_RATE_LIMIT_PER_KEY: "0" }),
  ]);
});
after(async () => {
  await Promise.all([server?.stop(), small?.stop()]);
});

/** Samples the server counted for `deployment` between the first window's start and the last's end. */
async function stored(client: EnterpriseAI, deployment: string, samples: { timestamp?: string | null }[]): Promise<number> {
  const first = Date.parse(samples[0]!.timestamp!) - 15_000;
  const last = Date.parse(samples[samples.length - 1]!.timestamp!);
  const view = await client.finops.gpu.allocation({ from: new Date(first), to: new Date(last + 1_000) });
  return view.deployments.find((d) => d.deployment_id === deployment)?.samples ?? 0;
}

describe("25,000 samples", () => {
  test("go in 5 requests of 5,000, accepted once; a resend is all duplicates", async () => {
    const deployment = uniq("bulk");
    // One GPU, 15 s windows, distinct timestamps over the last ~4.3 days, the newest a minute ago.
    const samples = series("GPU-bulk-0001", deployment, alignedPast(60_000), 25_000);
    assert.equal(new Set(samples.map((s) => s.timestamp)).size, 25_000);
    assert.ok(Date.parse(samples[samples.length - 1]!.timestamp!) < Date.now());

    const counting = countingFetch();
    const client = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, fetch: counting.fetch });
    const r = await client.finops.gpu.ingestSamples({ samples });
    assert.deepEqual(r, { accepted: 25_000, duplicates: 0 });
    assert.equal(counting.calls.length, 5);
    for (const call of counting.calls) {
      assert.equal((JSON.parse(call.body!) as { samples: unknown[] }).samples.length, 5_000);
      assert.equal(call.status, 200);
    }
    assert.equal(await stored(client, deployment, samples), 25_000);

    const again = await client.finops.gpu.ingestSamples({ samples });
    assert.deepEqual(again, { accepted: 25_000, duplicates: 25_000 });
    assert.equal(await stored(client, deployment, samples), 25_000, "still counted once");
  });
});

describe("413 payload_too_large (server EAI_MAX_BATCH=3000)", () => {
  test("with splitting off, the 413 surfaces as PayloadTooLargeError and nothing is stored", async () => {
    const deployment = uniq("too-large");
    const samples = series("GPU-413", deployment, alignedPast(60_000), 3_001);
    const client = new EnterpriseAI({
      baseUrl: small.url,
      apiKey: small.adminKey,
      maxBatchSize: 100_000,
      splitOnPayloadTooLarge: false,
      maxRetries: 2,
    });
    const e = await client.finops.gpu.ingestSamples({ samples }).catch((x: unknown) => x);
    assert.ok(e instanceof PayloadTooLargeError, String(e));
    assert.equal(e.status, 413);
    assert.equal(e.code, "payload_too_large");
    assert.equal(e.attempts, 1, "a 413 is not retried as is");
    assert.deepEqual(e.batch, { offset: 0, size: 3_001, total: 3_001, completed: 0, result: { accepted: 0, duplicates: 0 } });
    assert.equal(await stored(client, deployment, samples), 0);
  });

  test("10,000 samples in batches of 5,000: each 413 is halved and resent, all counted once", async () => {
    const deployment = uniq("halved");
    const samples = series("GPU-halved", deployment, alignedPast(60_000), 10_000);
    const counting = countingFetch();
    const client = new EnterpriseAI({ baseUrl: small.url, apiKey: small.adminKey, fetch: counting.fetch });
    const r = await client.finops.gpu.ingestSamples({ samples });
    assert.deepEqual(r, { accepted: 10_000, duplicates: 0 });
    assert.deepEqual(
      counting.calls.map((c) => [(JSON.parse(c.body!) as { samples: unknown[] }).samples.length, c.status]),
      [
        [5_000, 413],
        [2_500, 200],
        [2_500, 200],
        [5_000, 413],
        [2_500, 200],
        [2_500, 200],
      ],
    );
    assert.equal(await stored(client, deployment, samples), 10_000);
  });

  test("usage events are halved the same way", async () => {
    const tenant = await new EnterpriseAI({ baseUrl: small.url, apiKey: small.adminKey }).tenants.create({
      slug: uniq("events"),
      name: "Events",
    });
    const at = alignedPast(60_000);
    const events = Array.from({ length: 3_500 }, () => ({
      tenant_id: tenant.id,
      usage_type: "llm_tokens",
      source: "worker",
      occurred_at: at,
      units: { tokens_in: 1 },
    }));
    const counting = countingFetch();
    const client = new EnterpriseAI({ baseUrl: small.url, apiKey: small.adminKey, fetch: counting.fetch });
    assert.deepEqual(await client.usage.events({ events }), { accepted: 3_500 });
    assert.deepEqual(counting.calls.map((c) => c.status), [413, 200, 200]);
  });
});

describe("idempotency keys of a batched call", () => {
  test("each request its own key: a caller's key on the first, <key>.<n> on request n; the result's request id the last", async () => {
    const counting = countingFetch();
    const client = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxBatchSize: 2, fetch: counting.fetch });
    const deployment = uniq("keys");
    const samples = series("GPU-keys-0001", deployment, alignedPast(60_000), 5);
    const key = `batch-${deployment}`;
    const r = await client.finops.gpu.ingestSamples({ samples }, { idempotencyKey: key });
    assert.equal(r.accepted, 5);
    assert.deepEqual(counting.calls.map((c) => c.headers["Idempotency-Key"]), [key, `${key}-2`, `${key}-3`]);
    assert.deepEqual(counting.calls.map((c) => (JSON.parse(c.body!) as { samples: unknown[] }).samples.length), [2, 2, 1]);
    assert.equal(requestIdOf(r), counting.calls[2]!.requestId, "the last request's id");
  });
});
