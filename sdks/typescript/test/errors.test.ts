/**
 * Each error class from a real server's answer (401, 403, 404, 405, 409, 422, French messages); 429 comes
 * from a second server with EAI_RATE_LIMIT_PER_KEY=1, 413 in batching.test.ts. What a real server cannot be
 * made to answer on purpose (500, 503, and tenant_required, which no creatable key can reach) comes from the
 * fault proxy in front of it, in the server's envelope format.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  APIConnectionError,
  APITimeoutError,
  AuthenticationError,
  ConflictError,
  EnterpriseAI,
  EnterpriseAIError,
  IdempotencyKeyReusedError,
  InternalServerError,
  MethodNotAllowedError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ServiceUnavailableError,
  TenantRequiredError,
  ValidationError,
  isRetryable,
} from "@enterprise-ai/sdk";
import { alignedPast, sample, series, uniq } from "./helpers/data.js";
import { startFaultProxy, type FaultProxy } from "./helpers/proxy.js";
import { startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;
let limited: TestServer;
let admin: EnterpriseAI;
let acmeId: string;
let viewerKey: string;
const ACME = uniq("acme");
const GLOBEX = uniq("globex");

/** Runs `call`, asserts it rejects with `cls`, checks the envelope fields, returns the error. */
async function expectError<E extends EnterpriseAIError>(
  call: Promise<unknown>,
  cls: abstract new (...args: never[]) => E,
  status: number | undefined,
  code: string,
): Promise<E> {
  const err = await call.then(
    (v) => assert.fail(`expected ${cls.name}, got ${JSON.stringify(v)}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof cls, `expected ${cls.name}, got ${String(err)}`);
  assert.ok(err instanceof EnterpriseAIError);
  assert.ok(err instanceof Error);
  assert.equal(err.name, cls.name);
  assert.equal(err.status, status);
  assert.equal(err.code, code);
  assert.ok(err.message.length > 0);
  if (status !== undefined) {
    assert.ok(err.requestId && err.requestId.length > 0, "request id");
    assert.ok(err.messageI18n?.en && err.messageI18n.fr, "message_i18n has en and fr");
  }
  return err;
}

before(async () => {
  [server, limited] = await Promise.all([startServer(), startServer({ EAI_RATE_LIMIT_PER_KEY: "1" })]);
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  acmeId = (await admin.tenants.create({ slug: ACME, name: "Acme" })).id;
  await admin.tenants.create({ slug: GLOBEX, name: "Globex" });
  viewerKey = (await admin.auth.apiKeys.create({ role: "viewer", tenant_id: acmeId })).key;
});
after(async () => {
  await Promise.all([server?.stop(), limited?.stop()]);
});

describe("from the real server", () => {
  test("401 unauthorized: AuthenticationError", async () => {
    const bad = new EnterpriseAI({ baseUrl: server.url, apiKey: "eai_live_unknown_key_000000000000", maxRetries: 3 });
    const e = await expectError(bad.auth.whoami(), AuthenticationError, 401, "unauthorized");
    assert.equal(e.attempts, 1, "a 401 is never retried");
    assert.equal(isRetryable(e), false);
  });

  test("403 forbidden (role): PermissionDeniedError", async () => {
    const viewer = new EnterpriseAI({ baseUrl: server.url, apiKey: viewerKey, maxRetries: 3 });
    const e = await expectError(
      viewer.finops.allocationPolicies.create({ name: "nope", gpu_hourly_cost: "1" }),
      PermissionDeniedError,
      403,
      "forbidden",
    );
    assert.equal(e.attempts, 1);
  });

  test("403 forbidden (a tenant key naming another tenant): PermissionDeniedError", async () => {
    const viewer = new EnterpriseAI({ baseUrl: server.url, apiKey: viewerKey, tenant: GLOBEX, maxRetries: 0 });
    await expectError(viewer.finops.gpu.allocation(), PermissionDeniedError, 403, "forbidden");
    // Its own tenant is fine, by slug or by id.
    await viewer.finops.gpu.allocation({}, { tenant: ACME });
    await viewer.finops.gpu.allocation({}, { tenant: acmeId });
  });

  test("404 not_found: unknown tenant slug, tenant, policy", async () => {
    const lost = admin.withOptions({ tenant: "no-such-tenant" });
    const e = await expectError(lost.finops.gpu.allocation(), NotFoundError, 404, "not_found");
    assert.match(e.message, /no-such-tenant/);
    await expectError(admin.tenants.get("no-such-tenant"), NotFoundError, 404, "not_found");
    await expectError(admin.finops.allocationPolicies.supersede("alp_999999", {}), NotFoundError, 404, "not_found");
    await expectError(admin.finops.allocationPolicies.disable("alp_999999"), NotFoundError, 404, "not_found");
    await expectError(admin.auth.apiKeys.revoke("key_999999"), NotFoundError, 404, "not_found");
  });

  test("405 method_not_allowed through the raw request: MethodNotAllowedError", async () => {
    const e = await expectError(admin.request("PUT", "/v1/auth/whoami", { body: {} }), MethodNotAllowedError, 405, "method_not_allowed");
    assert.match(e.headers["allow"] ?? "", /GET/);
  });

  test("409 conflict: duplicate tenant slug, rotating a revoked key: ConflictError", async () => {
    await expectError(admin.tenants.create({ slug: ACME, name: "Acme again" }), ConflictError, 409, "conflict");
    const k = await admin.auth.apiKeys.create({ role: "sampler" });
    await admin.auth.apiKeys.revoke(k.id);
    await expectError(admin.auth.apiKeys.rotate(k.id), ConflictError, 409, "conflict");
  });

  test("422 validation_error: ValidationError with details rebased on the caller's list", async () => {
    const deployment = uniq("invalid");
    const samples = series("GPU-invalid", deployment, alignedPast(60_000), 10);
    samples[7] = { ...samples[7]!, utilization: 2 };
    const e = await expectError(
      admin.finops.gpu.ingestSamples({ samples }, { maxBatchSize: 5 }),
      ValidationError,
      422,
      "validation_error",
    );
    assert.ok(e.details && e.details.length >= 1);
    assert.deepEqual(
      e.details.map((d) => [d.index, d.field]),
      [[7, "utilization"]],
      "index 2 of the second batch is the caller's index 7",
    );
    assert.deepEqual(e.fields, ["utilization"]);
    assert.deepEqual(e.batch, { offset: 5, size: 5, total: 10, completed: 5, result: { accepted: 5, duplicates: 0 } });
    assert.equal(e.attempts, 1, "a 422 is never retried");

    const bad = await expectError(
      admin.usage.events({ events: [{ usage_type: "llm_tokens", source: "gateway", occurred_at: "yesterday", units: {} }] }),
      ValidationError,
      422,
      "validation_error",
    );
    assert.ok(bad.fields.includes("occurred_at"), JSON.stringify(bad.details));
    assert.ok(bad.fields.includes("tenant_id"), "a platform identity must name the tenant");
  });

  test("422 for a sample in the future (clock skew)", async () => {
    const future = sample({ gpu: "GPU-future", deployment: "future", end: new Date(Date.now() + 3_600_000) });
    const e = await expectError(admin.finops.gpu.ingestSamples({ samples: [future] }), ValidationError, 422, "validation_error");
    assert.deepEqual(e.fields, ["timestamp"]);
  });

  test("locale fr: French messages, message_i18n in both languages", async () => {
    const fr = admin.withOptions({ locale: "fr", tenant: "tenant-inconnu" });
    const e = await expectError(fr.finops.gpu.allocation(), NotFoundError, 404, "not_found");
    assert.equal(e.message, e.messageI18n?.fr);
    assert.notEqual(e.messageI18n?.fr, e.messageI18n?.en);
    assert.match(e.message, /n'existe pas/);
    assert.match(e.messageI18n?.en ?? "", /does not exist/);

    const en = await expectError(admin.tenants.get("tenant-inconnu", { locale: "en" }), NotFoundError, 404, "not_found");
    assert.equal(en.message, en.messageI18n?.en);

    const viewer = new EnterpriseAI({ baseUrl: server.url, apiKey: viewerKey, locale: "fr", maxRetries: 0 });
    const denied = await expectError(
      viewer.finops.allocationPolicies.create({ name: "x", gpu_hourly_cost: "1" }),
      PermissionDeniedError,
      403,
      "forbidden",
    );
    assert.match(denied.message, /ne permet pas/);
  });

  test("429 rate_limited from a server with EAI_RATE_LIMIT_PER_KEY=1: RateLimitError with retryAfter", async () => {
    const client = new EnterpriseAI({ baseUrl: limited.url, apiKey: limited.adminKey, maxRetries: 0 });
    let caught: RateLimitError | undefined;
    for (let i = 0; i < 10 && !caught; i++) {
      try {
        await client.auth.whoami();
      } catch (e) {
        if (!(e instanceof RateLimitError)) throw e;
        caught = e;
      }
    }
    assert.ok(caught, "ten quick calls at 1/s must be limited");
    assert.equal(caught.status, 429);
    assert.equal(caught.code, "rate_limited");
    assert.equal(typeof caught.retryAfter, "number");
    assert.ok(caught.retryAfter! >= 1, `Retry-After ${caught.retryAfter}`);
    assert.equal(caught.attempts, 1);
    assert.equal(isRetryable(caught), true);
  });
});

describe("idempotency keys at the real server", () => {
  test("the same key and body answers the first answer again; another body is an IdempotencyKeyReusedError", async () => {
    const key = `errors-${uniq("key")}`;
    const slug = uniq("idem");
    const first = await admin.tenants.create({ slug, name: "Idem" }, { idempotencyKey: key });
    const again = await admin.tenants.create({ slug, name: "Idem" }, { idempotencyKey: key });
    assert.equal(again.id, first.id, "the first answer, not a 409 conflict on the slug");
    const e = await expectError(
      admin.tenants.create({ slug: uniq("other"), name: "Other" }, { idempotencyKey: key }),
      IdempotencyKeyReusedError,
      409,
      "idempotency_key_reused",
    );
    assert.ok(e instanceof ConflictError, "a conflict error too");
    assert.equal(e.attempts, 1, "not retried");
  });
});

describe("from the fault proxy (answers the real server cannot be made to give)", () => {
  let proxy: FaultProxy;
  before(async () => {
    proxy = await startFaultProxy(server.url, (_n, req) => {
      const fault = req.headers["x-fault"];
      if (fault === "500") return { status: 500 };
      if (fault === "503") return { status: 503, retryAfter: 0 };
      if (fault === "tenant_required") return { status: 403, code: "tenant_required" };
      if (fault === "html502") return { status: 502, code: null, body: "<html>Bad gateway</html>" };
      if (fault === "hang") return { delayMs: 1_500 };
      return undefined;
    });
  });
  after(async () => {
    await proxy?.close();
  });
  const via = (fault: string, extra: ConstructorParameters<typeof EnterpriseAI>[0] = {}) =>
    new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, maxRetries: 0, defaultHeaders: { "x-fault": fault }, ...extra });

  test("500 internal: InternalServerError", async () => {
    const e = await expectError(via("500").auth.whoami(), InternalServerError, 500, "internal");
    assert.equal(isRetryable(e), true);
  });

  test("503 unavailable: ServiceUnavailableError", async () => {
    await expectError(via("503").auth.whoami(), ServiceUnavailableError, 503, "unavailable");
  });

  test("403 tenant_required: TenantRequiredError", async () => {
    await expectError(via("tenant_required").finops.gpu.allocation(), TenantRequiredError, 403, "tenant_required");
  });

  test("an answer without an envelope (a proxy's HTML 502) is the base class, its body kept", async () => {
    const e = await via("html502").auth.whoami().catch((x: unknown) => x);
    assert.ok(e instanceof EnterpriseAIError);
    assert.equal(Object.getPrototypeOf(e), EnterpriseAIError.prototype, "not a subclass");
    assert.equal(e.status, 502);
    assert.equal(e.code, "invalid_response");
    assert.equal(e.body, "<html>Bad gateway</html>");
    assert.match(e.requestId ?? "", /^fault-\d+$/, "the answer's X-Request-Id");
    assert.match(e.message, /Bad gateway/);
    assert.equal(isRetryable(e), true, "a 502 is retried");
  });

  test("no answer in time: APITimeoutError (an APIConnectionError)", async () => {
    const e = await expectError(via("hang", { timeoutMs: 200 }).auth.whoami(), APITimeoutError, undefined, "timeout");
    assert.ok(e instanceof APIConnectionError);
    assert.match(e.message, /timed out after 200 ms/);
  });

  test("nobody listening: APIConnectionError", async () => {
    const closed = await startFaultProxy(server.url);
    const url = closed.url;
    await closed.close();
    const client = new EnterpriseAI({ baseUrl: url, apiKey: server.adminKey, maxRetries: 0 });
    const e = await expectError(client.auth.whoami(), APIConnectionError, undefined, "connection_error");
    assert.ok(!(e instanceof APITimeoutError));
    assert.match(e.message, /ECONNREFUSED|fetch failed/);
  });

  test("the caller's AbortSignal rejects with its reason, never retried", async () => {
    const controller = new AbortController();
    const client = via("hang", { maxRetries: 3 });
    const call = client.auth.whoami({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error("stop now")), 100);
    await assert.rejects(call, /stop now/);
  });
});
