/**
 * One behaviour, four SDKs: every case of `contracts/v1/sdk/behaviour.json`, one test each, named after it, run
 * through one `scripts/sdk/fault_proxy.py` in front of one real `eai-gpu serve` (both started for this file). For
 * each case: queue its faults, make its call with its client and request options through the proxy, then check
 * every expectation against the proxy's log, the result or error, and the resources counted at the server itself.
 * Also: the client's defaults are the file's, and each error code of `error_kinds` is its kind's class.
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import {
  APIConnectionError,
  APITimeoutError,
  AuthenticationError,
  BudgetExceededError,
  ConflictError,
  DEFAULTS,
  EnterpriseAI,
  EnterpriseAIError,
  IdempotencyKeyReusedError,
  InternalServerError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RateLimitError,
  ServiceUnavailableError,
  TenantRequiredError,
  ValidationError,
  requestIdOf,
  type ClientOptions,
  type RequestOptions,
} from "@enterprise-ai/sdk";
import {
  loadBehaviour,
  startPythonFaultProxy,
  type Case,
  type LoggedRequest,
  type PythonFaultProxy,
} from "./helpers/behaviour.js";
import { startServer, type TestServer } from "./helpers/server.js";

const behaviour = loadBehaviour();

type ErrorClass = abstract new (...args: never[]) => EnterpriseAIError;

/** The one table kind -> class of this SDK (`error_kinds`, `api_error`, and the transport kinds). */
const KIND_CLASS: Record<string, ErrorClass> = {
  authentication: AuthenticationError,
  permission_denied: PermissionDeniedError,
  tenant_required: TenantRequiredError,
  not_found: NotFoundError,
  method_not_allowed: MethodNotAllowedError,
  payload_too_large: PayloadTooLargeError,
  conflict: ConflictError,
  idempotency_key_reused: IdempotencyKeyReusedError,
  validation: ValidationError,
  rate_limit: RateLimitError,
  internal_server: InternalServerError,
  service_unavailable: ServiceUnavailableError,
  budget_exceeded: BudgetExceededError,
  api_error: EnterpriseAIError,
  timeout: APITimeoutError,
  connection: APIConnectionError,
};

function classOfKind(kind: string): ErrorClass {
  const cls = KIND_CLASS[kind];
  assert.ok(cls, `behaviour.json names a kind this suite's table lacks: ${kind}`);
  return cls;
}

/** Asserts `err` is exactly the class of `kind` (not a subclass), and also of its parent kind if any. */
function assertKind(err: unknown, kind: string): asserts err is EnterpriseAIError {
  const cls = classOfKind(kind);
  assert.ok(err instanceof EnterpriseAIError, `expected a ${cls.name}, got ${String(err)}`);
  assert.equal(Object.getPrototypeOf(err), cls.prototype, `kind ${kind}: expected exactly ${cls.name}, got ${err.constructor.name}`);
  const parent = behaviour.error_kind_parents[kind];
  if (parent !== undefined) assert.ok(err instanceof classOfKind(parent), `a ${kind} error is also a ${parent} error`);
}

/** The client options of a case (`client`, snake_case names of the defaults) in this SDK's units. */
function clientOptions(c: Record<string, number> = {}): ClientOptions {
  const o: ClientOptions = {};
  for (const [name, v] of Object.entries(c)) {
    switch (name) {
      case "timeout_seconds": o.timeoutMs = v * 1000; break;
      case "max_retries": o.maxRetries = v; break;
      case "backoff_base_seconds": o.retryBaseDelayMs = v * 1000; break;
      case "backoff_max_seconds": o.retryMaxDelayMs = v * 1000; break;
      case "max_retry_after_seconds": o.maxRetryAfterMs = v * 1000; break;
      case "max_batch_size": o.maxBatchSize = v; break;
      default: assert.fail(`a client option this suite does not map: ${name}`);
    }
  }
  return o;
}

/** `{unique}`, `{i}`, `{tenant}`, `{uuid}`, `{now}` filled in, recursively. */
function fill(v: unknown, vars: { unique: string; tenant: string; i: number }): unknown {
  if (typeof v === "string") {
    return v
      .replaceAll("{unique}", vars.unique)
      .replaceAll("{tenant}", vars.tenant)
      .replaceAll("{i}", String(vars.i))
      .replaceAll("{uuid}", randomUUID())
      .replaceAll("{now}", new Date().toISOString());
  }
  if (Array.isArray(v)) return v.map((x) => fill(x, vars));
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x, vars)]));
  }
  return v;
}

let server: TestServer;
let proxy: PythonFaultProxy;
let admin: EnterpriseAI;
let tenantId: string;

before(async () => {
  server = await startServer();
  proxy = await startPythonFaultProxy(server.url);
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  tenantId = (await admin.tenants.create({ slug: `sdk-cases-${randomBytes(6).toString("hex")}`, name: "SDK cases" })).id;
});
after(async () => {
  await proxy?.stop();
  await server?.stop();
});

/** How many of a call's resources the server holds, counted directly (not through the proxy). */
async function count(listOperation: string): Promise<number> {
  switch (listOperation) {
    case "listTenants": return (await admin.tenants.list()).items.length;
    case "listAllocationPolicies": return (await admin.finops.allocationPolicies.list()).items.length;
    case "listBudgets": return (await admin.finops.budgets.list()).items.length;
    case "listApiKeys": return (await admin.auth.apiKeys.list()).items.length;
    default: return assert.fail(`no counter for ${listOperation}`);
  }
}

/** Makes a case's call; returns the result and the number of records sent (for a batch). */
async function makeCall(c: Case, client: EnterpriseAI): Promise<{ result: unknown; sent: number | undefined }> {
  const spec = behaviour.calls[c.call];
  assert.ok(spec, `behaviour.json has no calls.${c.call}`);
  const unique = randomBytes(6).toString("hex");
  const options: RequestOptions = {};
  if (c.request?.traceparent !== undefined) options.traceparent = c.request.traceparent;
  if (c.request?.idempotency_key !== undefined) options.idempotencyKey = c.request.idempotency_key;
  const records = (n: number | undefined) =>
    Array.from({ length: n ?? spec.default_count ?? 1 }, (_, i) => fill(spec.record, { unique, tenant: tenantId, i }));
  const body = fill(spec.body, { unique, tenant: tenantId, i: 0 });
  switch (c.call) {
    case "listTenants":
      return { result: await client.tenants.list(options), sent: undefined };
    case "createTenant":
      return { result: await client.tenants.create(body as never, options), sent: undefined };
    case "createAllocationPolicy":
      return { result: await client.finops.allocationPolicies.create(body as never, options), sent: undefined };
    case "createBudget":
      return { result: await client.finops.budgets.create(body as never, options), sent: undefined };
    case "createApiKey":
      return { result: await client.auth.apiKeys.create(body as never, options), sent: undefined };
    case "ingestGpuSamples": {
      const samples = records(c.request?.samples);
      return { result: await client.finops.gpu.ingestSamples({ samples: samples as never }, options), sent: samples.length };
    }
    case "ingestUsageEvents": {
      // The record names no tenant, and the suite's platform key must say whose events they are: it signs in to
      // the suite's tenant (`X-EAI-Tenant`), the SDK's way to name one.
      options.tenant = tenantId;
      const events = records(c.request?.events);
      return { result: await client.usage.events({ events: events as never }, options), sent: events.length };
    }
    default:
      return assert.fail(`a call this suite does not know: ${c.call}`);
  }
}

function checkLog(c: Case, log: LoggedRequest[]): void {
  const e = c.expect;
  const key = behaviour.headers.idempotency_key!.toLowerCase();
  assert.equal(log.length, e.attempts, `attempts seen by the proxy: ${JSON.stringify(log.map((r) => [r.method, r.path, r.status]))}`);
  e.min_gap_seconds?.forEach((min, i) => {
    const gap = log[i + 1]!.at - log[i]!.at;
    assert.ok(gap >= min, `gap ${i + 1}: ${gap.toFixed(3)} s, at least ${min} s expected`);
  });
  const keys = log.map((r) => r.headers[key]);
  if (e.same_idempotency_key) {
    assert.ok(keys[0], "an Idempotency-Key on the first attempt");
    for (const k of keys) assert.equal(k, keys[0], "the same Idempotency-Key on every attempt");
  }
  if (e.distinct_idempotency_keys !== undefined) {
    assert.ok(keys.every((k) => typeof k === "string" && k.length > 0), "an Idempotency-Key on every request");
    assert.equal(new Set(keys).size, e.distinct_idempotency_keys);
  }
  for (const [name, value] of Object.entries(e.header ?? {})) {
    for (const r of log) assert.equal(r.headers[name.toLowerCase()], value, `header ${name}`);
  }
  if (e.batch_sizes) assert.deepEqual(log.map((r) => r.records), e.batch_sizes);
  // Every POST and DELETE carries a key; a GET none.
  for (const r of log) {
    if (r.method === "POST" || r.method === "DELETE") assert.ok(r.headers[key], `${r.method} ${r.path} without an Idempotency-Key`);
    else assert.equal(r.headers[key], undefined);
  }
}

describe("contracts/v1/sdk/behaviour.json", () => {
  test("the client's defaults are the file's", () => {
    const d = behaviour.defaults;
    const want = {
      timeoutMs: d.timeout_seconds! * 1000,
      maxRetries: d.max_retries,
      retryBaseDelayMs: d.backoff_base_seconds! * 1000,
      retryMaxDelayMs: d.backoff_max_seconds! * 1000,
      maxRetryAfterMs: d.max_retry_after_seconds! * 1000,
      maxBatchSize: d.max_batch_size,
      flushIntervalMs: d.flush_interval_seconds! * 1000,
      usageMaxQueue: d.usage_max_queue,
    };
    assert.deepEqual({ ...DEFAULTS }, want);
    assert.equal(Object.keys(d).length, Object.keys(want).length, "every default of the file is checked");
    const client = new EnterpriseAI({ baseUrl: "http://127.0.0.1:9", apiKey: "eai_live_defaults_0000000000000000" });
    assert.equal(client.timeoutMs, want.timeoutMs);
    assert.equal(client.maxRetries, want.maxRetries);
    assert.equal(client.retryBaseDelayMs, want.retryBaseDelayMs);
    assert.equal(client.retryMaxDelayMs, want.retryMaxDelayMs);
    assert.equal(client.maxRetryAfterMs, want.maxRetryAfterMs);
    assert.equal(client.maxBatchSize, want.maxBatchSize);
    const emitter = client.usage.emitter();
    try {
      assert.equal(emitter.flushIntervalMs, want.flushIntervalMs);
      assert.equal(emitter.maxQueueSize, want.usageMaxQueue);
      assert.equal(emitter.maxBatchSize, want.maxBatchSize);
    } finally {
      void emitter.close();
    }
  });

  test("each error code of error_kinds is its kind's class", async () => {
    const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, maxRetries: 0 });
    for (const [code, kind] of Object.entries(behaviour.error_kinds)) {
      await proxy.queue([{ status: 400, code }]);
      const err = await client.tenants.list().then(
        () => assert.fail(`${code}: no error`),
        (x: unknown) => x,
      );
      assertKind(err, kind);
      assert.equal(err.code, code);
      assert.equal(err.status, 400);
    }
  });

  for (const c of behaviour.cases) {
    test(c.name, async () => {
      const e = c.expect;
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, ...clientOptions(c.client) });
      const countWith = behaviour.calls[c.call]?.count_with;
      const before = e.resources_created !== undefined && countWith ? await count(countWith) : undefined;
      await proxy.queue(c.faults);
      let result: unknown;
      let sent: number | undefined;
      let error: unknown;
      try {
        ({ result, sent } = await makeCall(c, client));
      } catch (x) {
        error = x;
      }
      const log = await proxy.log();
      if (e.outcome === "ok") {
        assert.equal(error, undefined, `expected success, got ${String(error)}`);
      } else {
        assert.notEqual(error, undefined, "expected an error");
        assertKind(error, e.kind!);
        if (e.status !== undefined) assert.equal(error.status, e.status);
        if (e.code !== undefined) assert.equal(error.code, e.code);
        assert.equal(error.attempts, e.attempts, "the error's attempt count");
        if (e.kind === "api_error" && error.status !== undefined) {
          // The base class keeps the whole answer: status, code, message, request id and body.
          assert.ok(error.body && error.body.length > 0, "the body is kept");
          assert.ok(error.requestId, "the request id is kept");
          assert.ok(error.message.length > 0);
          if (e.code !== undefined) assert.ok(error.body.includes(e.code));
        }
      }
      checkLog(c, log);
      if (e.request_id_on_result) {
        const id = requestIdOf(result);
        assert.ok(id && id.length > 0, "the answer's X-Request-Id on the result");
        assert.equal((result as { _request_id?: string })._request_id, id);
        assert.ok(!Object.keys(result as object).includes("_request_id"), "not enumerable");
      }
      if (e.accepted !== undefined) assert.equal((result as { accepted: number }).accepted, e.accepted);
      if (e.resources_created !== undefined) {
        if (countWith) {
          assert.equal((await count(countWith)) - before!, e.resources_created, "resources made, counted at the server");
        } else {
          // A batch: `accepted` equals the records sent (a retry the server did not replay answers duplicates).
          assert.equal((result as { accepted: number }).accepted, sent, "the records were counted once, as accepted");
        }
      }
    });
  }
});
