/**
 * Local inference providers against a real server of this file's own (the case of
 * crates/api/tests/http/token_costs.rs): priced by the last closed month, registered unconfirmed (`config`),
 * confirmed by a model list (`api`, from a tiny stand-in for a vLLM pod), refused when nothing answers, and
 * seen in samples only (`samples`).
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import {
  EnterpriseAI,
  PermissionDeniedError,
  ValidationError,
  type Provider,
  type ProviderCatalog,
  type ProviderDiscovery,
  type ProviderPricing,
} from "@enterprise-ai/sdk";
import { hourOfSamples, hourStart, uniq } from "./helpers/data.js";
import { startServer, type TestServer } from "./helpers/server.js";

const HOUR = 3_600_000;

let server: TestServer;
let admin: EnterpriseAI;
let vllm: Server;
let vllmUrl: string;
const priced = uniq("vllm-priced");
let lastMonth: Date;

function entry(catalog: ProviderCatalog, deployment: string): Provider {
  const mine = catalog.items.filter((p) => p.deployment_id === deployment);
  assert.equal(mine.length, 1, JSON.stringify(catalog));
  return mine[0]!;
}

before(async () => {
  server = await startServer();
  admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  // An OpenAI-compatible model list, as a vLLM pod answers GET /v1/models (the inference engine, not our server).
  vllm = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/v1/models") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [{ id: "m", object: "model" }] }));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => vllm.listen(0, "127.0.0.1", resolve));
  vllmUrl = `http://127.0.0.1:${(vllm.address() as AddressInfo).port}/v1`;

  // Last month, before the first catalog call (it caches its prices for 10 minutes): two hours of a deployment
  // at 10 USD per GPU-hour, 1,600 tokens in and 400 out.
  const now = new Date();
  lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 11));
  await admin.finops.allocationPolicies.create({ name: "flat", deployment_pattern: priced, currency: "USD", gpu_hourly_cost: 10, effective_from: "2020-01-01" });
  const samples = [...hourOfSamples("GPU-prc", priced, lastMonth), ...hourOfSamples("GPU-prc", priced, new Date(lastMonth.getTime() + HOUR))];
  assert.equal((await admin.finops.gpu.ingestSamples({ samples })).accepted, 480);
  const tenant = await admin.tenants.create({ slug: uniq("priced"), name: "Priced" });
  const units = { tokens_in: 1600, tokens_out: 400 };
  const at = new Date(lastMonth.getTime() + 60_000);
  const event = { usage_type: "llm_tokens", source: "gateway", occurred_at: at, deployment_id: priced, tenant_id: tenant.id, units };
  assert.equal((await admin.usage.events({ events: [event] })).accepted, 1);
});
after(async () => {
  await server?.stop();
  await new Promise((resolve) => vllm?.close(resolve));
});

describe("providers.catalog", () => {
  test("prices a provider by the last closed month, in decimal strings", async () => {
    const p = entry(await admin.providers.catalog(), priced);
    const discovery: ProviderDiscovery = p.discovery;
    assert.equal(discovery, "samples");
    assert.equal(p.base_url, `http://${priced}:8000/v1`);
    assert.equal(p.model, null);
    const pricing: ProviderPricing | null = p.pricing;
    assert.deepEqual(pricing, {
      per_mtok: "10000.0000",
      input_per_mtok: "7693.7500",
      output_per_mtok: "19225.0000",
      currency: "USD",
      period: lastMonth.toISOString().slice(0, 7),
      basis: "allocation",
      allocation_method: "weight",
    });
  });

  test("a deployment seen only in samples: discovery samples, its in-cluster URL", async () => {
    const deployment = uniq("vllm-sampled");
    await admin.finops.gpu.ingestSamples({ samples: hourOfSamples("GPU-smp", deployment, hourStart(3)) });
    const p = entry(await admin.providers.catalog(), deployment);
    assert.deepEqual([p.discovery, p.base_url, p.models, p.local, p.enabled], ["samples", `http://${deployment}:8000/v1`, [], true, true]);
    assert.equal(p.pricing, null, "no token last month");
  });
});

describe("providers.register", () => {
  test("verify: false registers it unconfirmed (config); the catalog lists it with its base_url", async () => {
    const deployment = uniq("vllm-mistral");
    const base_url = `http://${deployment}.ai:8000/v1`;
    const p = await admin.providers.register({ deployment_id: deployment, base_url, label: "Mistral 7B", verify: false });
    assert.deepEqual(
      [p.discovery, p.deployment_id, p.base_url, p.label, p.id, p.enabled, p.models, p.model, p.pricing],
      ["config", deployment, base_url, "Mistral 7B", "vllm", true, [], null, null],
    );
    const listed = entry(await admin.providers.catalog(), deployment);
    assert.deepEqual([listed.discovery, listed.base_url, listed.provider_id], ["config", base_url, p.provider_id]);

    // A new registration replaces the previous one.
    const again = await admin.providers.register({ deployment_id: deployment, base_url, enabled: false, verify: false });
    assert.equal(again.enabled, false);
    assert.equal(entry(await admin.providers.catalog(), deployment).enabled, false);
  });

  test("verify: a URL that lists no model is a ValidationError on base_url", async () => {
    const deployment = uniq("vllm-nowhere");
    await assert.rejects(admin.providers.register({ deployment_id: deployment, base_url: "http://127.0.0.1:9/v1" }), (e: unknown) => {
      assert.ok(e instanceof ValidationError, String(e));
      assert.equal(e.status, 422);
      assert.deepEqual(e.fields, ["base_url"]);
      return true;
    });
    const catalog = await admin.providers.catalog();
    assert.ok(!catalog.items.some((p) => p.deployment_id === deployment), "nothing registered");
  });

  test("verify: confirmed by its model list (api), the trailing slash dropped", async () => {
    const deployment = uniq("vllm-llama");
    const p = await admin.providers.register({ deployment_id: deployment, base_url: `${vllmUrl}/`, label: "Llama" });
    assert.deepEqual([p.discovery, p.base_url, p.models, p.model], ["api", vllmUrl, ["m"], "m"]);
    const listed = entry(await admin.providers.catalog(), deployment);
    assert.deepEqual([listed.discovery, listed.base_url, listed.models, listed.label], ["api", vllmUrl, ["m"], "Llama"]);
  });

  test("registering the priced deployment keeps its price", async () => {
    const p = await admin.providers.register({ deployment_id: priced, base_url: vllmUrl });
    assert.equal(p.discovery, "api");
    const listed = entry(await admin.providers.catalog(), priced);
    assert.deepEqual([listed.discovery, listed.base_url, listed.pricing?.per_mtok], ["api", vllmUrl, "10000.0000"]);
  });

  test("only a platform admin registers", async () => {
    const tenant = await admin.tenants.create({ slug: uniq("prov"), name: "Prov" });
    const key = await admin.auth.apiKeys.create({ role: "finops", tenant_id: tenant.id });
    const finops = new EnterpriseAI({ baseUrl: server.url, apiKey: key.key, maxRetries: 0 });
    await assert.rejects(
      finops.providers.register({ deployment_id: uniq("x"), base_url: "http://x:8000/v1", verify: false }),
      PermissionDeniedError,
    );
  });
});
