/**
 * The README's first TypeScript snippet (Quick start), as pasted, in a fresh project where the package was
 * installed as the README's Install says (`npm pack`, then `npm install <the tarball>`), against a real server.
 * Only what the README tells the reader to supply is supplied: `<control-plane-url>` replaced by the server's
 * URL, `EAI_API_KEY` in the environment, `samples` defined before the snippet, the tenant `acme` registered.
 *
 * The project: EAI_SDK_CONSUMER when set (test.sh: the one where it installed the tarball that the README's
 * commands built from a clean copy of the clone), else one made here from `npm pack` of this package (its
 * `dist/`, which `npm test` has just built).
 */
import assert from "node:assert/strict";
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { EnterpriseAI } from "@enterprise-ai/sdk";
import { alignedPast, series } from "./helpers/data.js";
import { PKG_ROOT } from "./helpers/paths.js";
import { startServer, type TestServer } from "./helpers/server.js";
import { codeBlocks, README } from "./helpers/snippets.js";

const ACME_ID = "3d1f6a2b-7c4e-4b8a-9e21-5a6b7c8d9e0f";
const DEPLOYMENT = "readme-vllm-llama-70b";

let server: TestServer;
let scratch: string;
let project: string;

function check(run: SpawnSyncReturns<string>, what: string): string {
  assert.equal(run.status, 0, `${what} failed (exit ${run.status}, ${run.error ?? ""}):\n${run.stdout}\n${run.stderr}`);
  return run.stdout;
}

function npm(args: string[], cwd: string): string {
  return check(spawnSync("npm", args, { cwd, encoding: "utf8", timeout: 120_000 }), `npm ${args.join(" ")}`);
}

before(async () => {
  server = await startServer();
  scratch = mkdtempSync(join(tmpdir(), "eai-sdk-readme-"));
  if (process.env.EAI_SDK_CONSUMER) {
    project = process.env.EAI_SDK_CONSUMER;
    return;
  }
  npm(["pack", "--ignore-scripts", "--pack-destination", scratch, "--silent"], PKG_ROOT);
  const tarballs = readdirSync(scratch).filter((f) => f.endsWith(".tgz"));
  assert.deepEqual(tarballs, ["enterprise-ai-sdk-0.1.0.tgz"], "the README's tarball name");
  project = join(scratch, "project");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "readme-quick-start", version: "1.0.0", private: true }));
  npm(["install", "--no-audit", "--no-fund", join(scratch, tarballs[0]!)], project);
});

after(async () => {
  await server?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

function quickStart(): string[] {
  const first = codeBlocks("ts")[0];
  assert.ok(first, "README.md has no ```ts block");
  return first;
}

test("the README says what to put for each placeholder of its Quick start", () => {
  const text = readFileSync(README, "utf8");
  const section = text.slice(text.indexOf("## Quick start"), text.indexOf("\n## ", text.indexOf("## Quick start") + 1));
  const prose = section.slice(section.indexOf("```ts")).split("```").slice(2).join("```");
  for (const name of ["<control-plane-url>", "EAI_API_KEY", "samples", "acme"]) {
    assert.ok(prose.includes("`" + name + "`"), `the Quick start does not say what to put for ${name}`);
  }
  const snippet = quickStart().join("\n");
  assert.equal(snippet.split("<control-plane-url>").length, 2, "one <control-plane-url>");
  assert.ok(snippet.includes("process.env.EAI_API_KEY"));
});

test("the installed package is the tarball's, not this folder", () => {
  const url = check(
    spawnSync(process.execPath, ["--input-type=module", "-e", 'console.log(import.meta.resolve("@enterprise-ai/sdk"))'], {
      cwd: project,
      encoding: "utf8",
    }),
    "resolving @enterprise-ai/sdk",
  ).trim();
  const path = realpathSync(new URL(url));
  assert.ok(path.startsWith(realpathSync(join(project, "node_modules"))), path);
  assert.ok(path.endsWith(join("dist", "esm", "index.js")), path);
  assert.ok(!path.startsWith(realpathSync(PKG_ROOT)), path);
});

test("the README's Quick start runs as pasted, in a project that installed the package as the README says", async () => {
  const admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  await admin.tenants.create({ slug: "acme", name: "Acme Corp", id: ACME_ID });

  const samples = series("GPU-readme-5e1f", DEPLOYMENT, alignedPast(90_000), 6, ACME_ID);
  const snippet = quickStart().join("\n").replace("<control-plane-url>", server.url);
  const file = join(project, `quick-start-${process.pid}.mjs`);
  writeFileSync(file, `const samples = ${JSON.stringify(samples, null, 2)};\n${snippet}\n`);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EAI_")));
  try {
    check(
      spawnSync(process.execPath, [file], { cwd: project, env: { ...env, EAI_API_KEY: server.adminKey }, encoding: "utf8", timeout: 60_000 }),
      "the README's Quick start",
    );
  } finally {
    rmSync(file, { force: true });
  }

  // What it did is on the server: the samples (once), the policy, the catalog entry.
  const policies = await admin.finops.allocationPolicies.list();
  const created = policies.items.filter((p) => p.name === "local-gpu-default");
  assert.equal(created.length, 1, JSON.stringify(policies));
  assert.equal(created[0]!.currency, "EUR");
  assert.match(created[0]!.gpu_hourly_cost, /^2\.50*$/);
  const first = new Date(Date.parse(samples[0]!.timestamp!) - 15_000);
  const last = new Date(Date.parse(samples[samples.length - 1]!.timestamp!));
  const view = await admin.finops.gpu.allocation({ from: first, to: last });
  const dep = view.deployments.find((d) => d.deployment_id === DEPLOYMENT);
  assert.ok(dep, JSON.stringify(view));
  assert.equal(dep.samples, 6);
  const catalog = await admin.providers.catalog({ tenant: "acme" });
  assert.ok(catalog.items.some((p) => p.deployment_id === DEPLOYMENT), JSON.stringify(catalog));
});

test("the README's snippets of client.request, idempotency keys, request ids and logging run as pasted", async () => {
  const wanted = ['client.request("GET", "/v1/tenants")', 'idempotencyKey: "onboard-globex"', "requestIdOf(tenants)", 'logLevel: "debug"'];
  const blocks = codeBlocks("ts").map((b) => b.join("\n"));
  const picked = wanted.map((w) => {
    const found = blocks.filter((b) => b.includes(w));
    assert.equal(found.length, 1, `one README block with ${w}`);
    return found[0]!;
  });
  // What the README leaves to the reader: a `client`, and the placeholder URL.
  const body = picked.join("\n").replaceAll("<control-plane-url>", server.url);
  const program = [
    'import { EnterpriseAI } from "@enterprise-ai/sdk";',
    `const client = new EnterpriseAI({ baseUrl: ${JSON.stringify(server.url)}, apiKey: process.env.EAI_API_KEY });`,
    body,
    "await verbose.tenants.list();",
  ].join("\n");
  const file = join(project, `snippets-${process.pid}.mjs`);
  writeFileSync(file, program);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EAI_")));
  let out: string;
  try {
    out = check(
      spawnSync(process.execPath, [file], { cwd: project, env: { ...env, EAI_API_KEY: server.adminKey }, encoding: "utf8", timeout: 60_000 }),
      "the README's snippets",
    );
  } finally {
    rmSync(file, { force: true });
  }
  // requestIdOf(tenants) and tenants._request_id: the same id, printed twice; the debug logger's line.
  const ids = /^(\S+) (\S+)$/m.exec(out);
  assert.ok(ids && ids[1] === ids[2] && ids[1] !== "undefined", out);
  assert.match(out, /eai-gpu: GET \/v1\/tenants -> 200 \(attempt 1\)/);
  const admin = new EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey, maxRetries: 0 });
  const slugs = (await admin.tenants.list()).items.map((t) => t.slug);
  assert.ok(slugs.includes("globex") && slugs.includes("initech"), slugs.join(","));
});
