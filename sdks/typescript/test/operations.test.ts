/**
 * Every operation of `contracts/v1/openapi.json` is wrapped, and every operation the SDK wraps is in the document
 * with the same method and path: both directions, from the SDK's own table (`OPERATIONS`, what the resources call
 * through). Then the operations no other test calls, against a real server: `getAllocationPolicy` and the plain
 * calls (`healthz`, `readyz`, `metrics`, `openapi`), and the raw escape hatch `client.request`.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { EnterpriseAI, NotFoundError, OPERATIONS, ValidationError, requestIdOf } from "@enterprise-ai/sdk";
import { uniq } from "./helpers/data.js";
import { startFaultProxy } from "./helpers/proxy.js";
import { PKG_ROOT, REPO_ROOT } from "./helpers/paths.js";
import { startServer, type TestServer } from "./helpers/server.js";

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

/** operationId -> "METHOD path" of the contract document. */
function documentOperations(): Map<string, string> {
  const doc = JSON.parse(readFileSync(join(REPO_ROOT, "contracts", "v1", "openapi.json"), "utf8")) as {
    paths: Record<string, Record<string, { operationId?: string }>>;
  };
  const ops = new Map<string, string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op === undefined) continue;
      assert.ok(op.operationId, `${method.toUpperCase()} ${path} has no operationId`);
      ops.set(op.operationId, `${method.toUpperCase()} ${path}`);
    }
  }
  return ops;
}

describe("operations", () => {
  const documented = documentOperations();
  const wrapped = new Map(Object.entries(OPERATIONS).map(([id, op]) => [id, `${op.method} ${op.path}`]));

  test("every operation of the document is wrapped by the SDK", () => {
    const missing = [...documented.keys()].filter((id) => !wrapped.has(id));
    assert.deepEqual(missing, [], "operations of contracts/v1/openapi.json the SDK does not wrap");
    assert.ok(documented.size >= 39, `the document has ${documented.size} operations`);
  });

  test("every operation the SDK wraps is in the document, with the same method and path", () => {
    for (const [id, route] of wrapped) {
      assert.equal(route, documented.get(id), `${id}: the SDK sends ${route}`);
    }
  });

  test("the resources call the API only through the table (no path of their own)", () => {
    const dir = join(PKG_ROOT, "src", "resources");
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), "utf8");
      assert.doesNotMatch(text, /\.request\s*[<(]/, `${file} calls client.request directly`);
      for (const m of text.matchAll(/_operation(?:<[^>]*>)?\(\s*"([A-Za-z]+)"/g)) {
        assert.ok(wrapped.has(m[1]!), `${file} calls an operation not in the table: ${m[1]}`);
      }
    }
  });
});

describe("against a real server", () => {
  let server: TestServer;
  let admin: EnterpriseAI;
  before(async () => {
    server = await startServer();
    admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  });
  after(async () => {
    await server?.stop();
  });

  test("getAllocationPolicy: allocationPolicies.get(id)", async () => {
    const name = uniq("get-policy");
    const created = await admin.finops.allocationPolicies.create({ name, gpu_hourly_cost: "2.10", currency: "EUR" });
    const policy = await admin.finops.allocationPolicies.get(created.id);
    assert.equal(policy.id, created.id);
    assert.equal(policy.name, name);
    assert.equal(policy.gpu_hourly_cost, "2.10", "money stays a decimal string");
    assert.ok(requestIdOf(policy));
    await assert.rejects(admin.finops.allocationPolicies.get("alp_does_not_exist"), NotFoundError);
  });

  test("the plain calls: healthz, readyz, metrics, openapi", async () => {
    await admin.healthz();
    await admin.readyz();
    const metrics = await admin.metrics();
    assert.equal(typeof metrics, "string");
    assert.match(metrics, /^# (HELP|TYPE) /m);
    const doc = await admin.openapi();
    assert.equal(typeof doc.openapi, "string");
  });

  test("client.request: any method and path, with the same auth, retries, idempotency key and errors", async () => {
    const proxy = await startFaultProxy(server.url, (n) => (n === 1 ? { status: 503, retryAfter: 0 } : undefined));
    try {
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, retryBaseDelayMs: 10 });
      const slug = uniq("raw");
      const made = await client.request<{ slug: string }>("POST", "/v1/tenants", { body: { slug, name: "Raw" } }, {
        idempotencyKey: `raw-${slug}`,
        headers: { "x-extra": "yes" },
      });
      assert.equal(made.slug, slug);
      assert.deepEqual(proxy.requests.map((r) => r.status), [503, 201], "retried");
      for (const r of proxy.requests) {
        assert.equal(r.headers["idempotency-key"], `raw-${slug}`);
        assert.equal(r.headers["x-extra"], "yes");
        assert.equal(r.headers["authorization"], `Bearer ${server.adminKey}`);
      }
      const e = await client.request("POST", "/v1/tenants", { body: { slug: "" } }).catch((x: unknown) => x);
      assert.ok(e instanceof ValidationError, String(e));
    } finally {
      await proxy.close();
    }
  });

  test("fields a newer server adds do not break parsing, and are kept", async () => {
    // A fetch that answers what the server answered plus fields this SDK's contract does not know.
    const newer = async (input: string, init: RequestInit): Promise<Response> => {
      const res = await fetch(input, init);
      const doc = (await res.json()) as { items: Record<string, unknown>[] };
      const body = { ...doc, next_cursor: "c2", items: doc.items.map((t) => ({ ...t, region: "eu-west", quota: { gpus: 8 } })) };
      return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
    };
    await admin.tenants.create({ slug: uniq("newer"), name: "Newer" });
    const client = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, fetch: newer });
    const list = await client.tenants.list();
    assert.ok(list.items.length > 0);
    assert.equal((list as unknown as { next_cursor: string }).next_cursor, "c2");
    assert.equal((list.items[0] as unknown as { region: string }).region, "eu-west");
    assert.equal(typeof list.items[0]!.slug, "string");
  });

  test("the logger: each attempt at debug (method, path, status, attempt, wait), the retries at info, no secret", async () => {
    const proxy = await startFaultProxy(server.url, (n) => (n === 1 ? { status: 503, retryAfter: 0 } : undefined));
    const lines: { level: string; message: string; fields: unknown }[] = [];
    const record = (level: string) => (message: string, fields?: unknown) => lines.push({ level, message, fields });
    const logger = { debug: record("debug"), info: record("info"), warn: record("warn"), error: record("error") };
    try {
      const client = new EnterpriseAI({ baseUrl: proxy.url, apiKey: server.adminKey, logger, logLevel: "debug" });
      await client.tenants.list();
      assert.deepEqual(lines.map((l) => l.level), ["info", "debug"]);
      assert.deepEqual(
        lines.map((l) => {
          const f = l.fields as { method: string; path: string; status: number; attempt: number; wait: number | undefined };
          return [f.method, f.path, f.status, f.attempt, f.wait];
        }),
        [["GET", "/v1/tenants", 503, 1, 0], ["GET", "/v1/tenants", 200, 2, undefined]],
      );
      assert.match(lines[0]!.message, /GET \/v1\/tenants -> 503 \(attempt 1, retrying in 0 ms\)/);
      assert.ok(!JSON.stringify(lines).includes(server.adminKey), "no API key in the logs");
      lines.length = 0;
      const quiet = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, logger, logLevel: "warn" });
      await quiet.tenants.list();
      assert.deepEqual(lines, [], "nothing at warn when all goes well");
    } finally {
      await proxy.close();
    }
  });
});
