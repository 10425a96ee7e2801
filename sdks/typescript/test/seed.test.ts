/**
 * The seed's TypeScript snippet, as written (test/fixtures/seed-snippet.mjs, which must hold exactly the lines of
 * the "TypeScript" section of sdks/seed/sdk-examples.txt), run as a subprocess that imports
 * `@enterprise-ai/sdk` (the built ESM output) against a real server: only `<control-plane-url>` is substituted
 * and `const samples = [...]` prepended. Every call must succeed.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { EnterpriseAI } from "@enterprise-ai/sdk";
import { alignedPast, series } from "./helpers/data.js";
import { PKG_ROOT } from "./helpers/paths.js";
import { startServer, type TestServer } from "./helpers/server.js";
import { codeBlocks, fileLines, SEED_EXAMPLES, seedSnippet } from "./helpers/snippets.js";

const ACME_ID = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";
const FIXTURE = join(PKG_ROOT, "test/fixtures/seed-snippet.mjs");
const SNIPPET = readFileSync(FIXTURE, "utf8");

let server: TestServer;
let dir: string;

before(async () => {
  server = await startServer();
  dir = mkdtempSync(join(tmpdir(), "eai-sdk-seed-"));
  // Make `@enterprise-ai/sdk` resolvable from the snippet's folder: node_modules/@enterprise-ai/sdk -> this package.
  mkdirSync(join(dir, "node_modules", "@enterprise-ai"), { recursive: true });
  symlinkSync(PKG_ROOT, join(dir, "node_modules", "@enterprise-ai", "sdk"), "dir");
});

after(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the fixture holds the seed's TypeScript snippet, line for line", () => {
  const seed = seedSnippet("TypeScript");
  assert.deepEqual(fileLines(FIXTURE), seed, `${FIXTURE} must hold the TypeScript section of ${SEED_EXAMPLES}`);
  // The seed's placeholders, once each: what this test substitutes (the URL) or supplies (samples, the key).
  assert.equal(seed.join("\n").split("<control-plane-url>").length, 2);
  assert.ok(seed.some((line) => line.includes("process.env.EAI_API_KEY")));
  assert.ok(seed.some((line) => line.includes("samples: samples")));
});

test("the README's Quick start is the seed snippet, verbatim", () => {
  const readme = readFileSync(join(PKG_ROOT, "README.md"), "utf8");
  assert.ok(readme.includes(SNIPPET.trim()), "README.md must contain test/fixtures/seed-snippet.mjs verbatim");
  assert.deepEqual(codeBlocks("ts")[0], seedSnippet("TypeScript"), "the README's first ```ts block is the seed's snippet");
});

test("the seed snippet runs unchanged against a real server", async () => {
  const admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  const acme = await admin.tenants.create({ slug: "acme", name: "Acme Corp", id: ACME_ID });
  assert.equal(acme.id, ACME_ID);

  // A dedicated deployment of acme: 8 consecutive 15 s windows ending a minute ago.
  const samples = series("GPU-5e1f", "vllm-llama-70b", alignedPast(60_000), 8, ACME_ID);
  const program = `const samples = ${JSON.stringify(samples, null, 2)};\n${SNIPPET.replace("<control-plane-url>", server.url)}`;
  assert.equal(program.split("<control-plane-url>").length, 1);
  const file = join(dir, "seed.mjs");
  writeFileSync(file, program);

  const run = spawnSync(process.execPath, [file], {
    cwd: dir,
    env: { ...process.env, EAI_API_KEY: server.adminKey },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(run.status, 0, `seed snippet failed (exit ${run.status}):\n${run.stdout}\n${run.stderr}`);

  // What it did is on the server: the samples (once), the policy, the catalog entry.
  const policies = await admin.finops.allocationPolicies.list();
  const created = policies.items.find((p) => p.name === "local-gpu-default");
  assert.ok(created, "the seed's policy exists");
  assert.equal(created.currency, "EUR");
  assert.equal(typeof created.gpu_hourly_cost, "string");
  assert.match(created.gpu_hourly_cost, /^2\.50*$/);

  const first = new Date(Date.parse(samples[0]!.timestamp!) - 15_000);
  const last = new Date(Date.parse(samples[samples.length - 1]!.timestamp!));
  // The platform view (an acme reader sees no row for samples no policy priced: the seed's policy starts now).
  const view = await admin.finops.gpu.allocation({ from: first, to: last });
  const dep = view.deployments.find((d) => d.deployment_id === "vllm-llama-70b");
  assert.ok(dep, JSON.stringify(view));
  assert.equal(dep.samples, 8);
  assert.equal(dep.dedicated, true);

  const catalog = await admin.providers.catalog({ tenant: "acme" });
  assert.ok(catalog.items.some((p) => p.base_url.includes("vllm-llama-70b")), JSON.stringify(catalog));
});
