/** The usage emitter: batching, flush on size and on a timer, at least once with stable ids, close. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, test } from "node:test";
import { EnterpriseAI, ServiceUnavailableError, UsageEmitter, ValidationError, type EmitterFailure } from "@enterprise-ai/sdk";
import { alignedPast, uniq } from "./helpers/data.js";
import { PKG_ROOT } from "./helpers/paths.js";
import { countingFetch, startFaultProxy } from "./helpers/proxy.js";
import { startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;
let tenantId: string;

before(async () => {
  server = await startServer();
  const admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey });
  tenantId = (await admin.tenants.create({ slug: uniq("emit"), name: "Emitter" })).id;
});
after(async () => {
  await server?.stop();
});

const event = (i: number) => ({
  tenant_id: tenantId,
  usage_type: "llm_tokens",
  source: "worker",
  occurred_at: alignedPast(60_000),
  deployment_id: "vllm-llama-70b",
  units: { tokens_in: 100 + i, tokens_out: 10 },
  run_id: `run-${i}`,
});

async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("emit queues with stable UUIDs; flush sends batches of maxBatchSize", async () => {
  const counting = countingFetch();
  const client = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, fetch: counting.fetch });
  const emitter = client.usage.emitter({ maxBatchSize: 3, flushIntervalMs: 0 });
  assert.ok(emitter instanceof UsageEmitter);
  const ids = [emitter.emit(event(0)), emitter.emit(event(1))];
  assert.equal(emitter.pending, 2, "below maxBatchSize nothing is sent yet");
  assert.equal(counting.calls.length, 0);
  for (let i = 2; i < 7; i++) ids.push(emitter.emit(event(i)));
  assert.equal(new Set(ids).size, 7);
  for (const id of ids) assert.match(id, /^[0-9a-f-]{36}$/);
  assert.equal(emitter.emit({ ...event(7), event_id: "5d2e8a41-9c7b-4f60-8e13-2a4b6c8d0f12" }), "5d2e8a41-9c7b-4f60-8e13-2a4b6c8d0f12");
  const r = await emitter.close();
  assert.equal(emitter.pending, 0);
  const sent = counting.calls.map((c) => (JSON.parse(c.body!) as { events: { event_id: string }[] }).events);
  assert.deepEqual(sent.map((b) => b.length), [3, 3, 2], "batches of at most 3");
  assert.deepEqual(sent.flat().map((e) => e.event_id), [...ids, "5d2e8a41-9c7b-4f60-8e13-2a4b6c8d0f12"], "in order");
  assert.ok(r.accepted <= 8);
  assert.throws(() => emitter.emit(event(9)), /after close/);
});

test("the timer flushes in the background", async () => {
  const counting = countingFetch();
  const client = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, fetch: counting.fetch });
  const emitter = client.usage.emitter({ flushIntervalMs: 50 });
  emitter.emit(event(1));
  emitter.emit(event(2));
  await until(() => emitter.pending === 0);
  assert.equal(counting.calls.length, 1);
  assert.equal(counting.calls[0]!.status, 200);
  await emitter.close();
});

test("at least once: a failed batch stays queued and is resent with the same ids", async () => {
  // The first request reaches the server, but its answer is lost (503); retries are off, so flush fails.
  const proxy = await startFaultProxy(server.url, (n) => (n === 1 ? { status: 503, forwardFirst: true } : undefined));
  try {
    const failures: EmitterFailure[] = [];
    const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, maxRetries: 0 });
    const emitter = client.usage.emitter({ flushIntervalMs: 0, onError: (_e, f) => failures.push(f) });
    for (let i = 0; i < 4; i++) emitter.emit(event(i));
    await assert.rejects(emitter.flush(), ServiceUnavailableError);
    assert.equal(emitter.pending, 4, "nothing acknowledged, nothing dropped");
    assert.equal(failures.length, 1);
    assert.equal(failures[0]!.dropped, false);
    assert.deepEqual(await emitter.flush(), { accepted: 4 });
    assert.equal(emitter.pending, 0);
    assert.equal(proxy.requests.length, 2);
    assert.equal(proxy.requests[0]!.body, proxy.requests[1]!.body, "the same events, the same ids");
    await emitter.close();
  } finally {
    await proxy.close();
  }
});

test("a batch that can never pass (422) is dropped and reported", async () => {
  const failures: { error: unknown; failure: EmitterFailure }[] = [];
  const client = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey });
  const emitter = client.usage.emitter({ flushIntervalMs: 0, onError: (error, failure) => failures.push({ error, failure }) });
  emitter.emit({ ...event(0), units: { "Not A Unit": 1 } });
  await assert.rejects(emitter.flush(), ValidationError);
  assert.equal(emitter.pending, 0);
  assert.equal(failures.length, 1);
  assert.equal(failures[0]!.failure.dropped, true);
  assert.equal(failures[0]!.failure.events.length, 1);
  emitter.emit(event(1));
  assert.deepEqual(await emitter.close(), { accepted: 1 });
});

test("the queue is bounded", () => {
  const client = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey });
  const emitter = client.usage.emitter({ maxQueueSize: 2, maxBatchSize: 10, flushIntervalMs: 0 });
  emitter.emit(event(0));
  emitter.emit(event(1));
  assert.throws(() => emitter.emit(event(2)), RangeError);
  return emitter.close().then((r) => assert.deepEqual(r, { accepted: 2 }));
});

test("unsent events are flushed when the process is about to exit (beforeExit), without close()", async () => {
  const proxy = await startFaultProxy(server.url);
  try {
    // A separate Node process: emits three events with no timer flush due, then simply ends.
    const sdk = pathToFileURL(join(PKG_ROOT, "dist", "esm", "index.js")).href;
    const script = `
      import { EnterpriseAI } from ${JSON.stringify(sdk)};
      const client = new EnterpriseAI({ baseUrl: process.env.URL, apiKey: process.env.KEY });
      const emitter = client.usage.emitter({ flushIntervalMs: 60000 });
      for (let i = 0; i < 3; i++) {
        emitter.emit({ tenant_id: process.env.TENANT, usage_type: "llm_tokens", source: "exit", occurred_at: new Date(),
          units: { tokens_in: 1 } });
      }
      console.log("pending", emitter.pending);`;
    const out = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ["--input-type=module", "-e", script],
        { env: { ...process.env, URL: proxy.url, KEY: server.adminKey, TENANT: tenantId }, timeout: 20_000 },
        (err, stdout, stderr) => (err ? reject(new Error(`${String(err)}\n${stderr}`)) : resolve(stdout)),
      );
    });
    assert.match(out, /pending 3/);
    assert.equal(proxy.requests.length, 1, "one batch sent at exit");
    assert.equal(proxy.requests[0]!.path, "/v1/usage/events");
    assert.equal(proxy.requests[0]!.status, 200);
    assert.equal((JSON.parse(proxy.requests[0]!.body) as { events: unknown[] }).events.length, 3);
  } finally {
    await proxy.close();
  }
});
