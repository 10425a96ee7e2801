/** The CommonJS build, loaded with `require("@enterprise-ai/sdk")`, against a real server. */
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { sep } from "node:path";
import { after, before, test } from "node:test";
import * as esm from "@enterprise-ai/sdk";
import { startServer, type TestServer } from "./helpers/server.js";

const require = createRequire(import.meta.url);
type Sdk = typeof esm;

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.stop();
});

test("require() resolves to dist/cjs and import to dist/esm", () => {
  const cjsPath = require.resolve("@enterprise-ai/sdk");
  assert.ok(cjsPath.endsWith(["dist", "cjs", "index.js"].join(sep)), cjsPath);
  const esmPath = import.meta.resolve("@enterprise-ai/sdk");
  assert.ok(esmPath.endsWith("dist/esm/index.js"), esmPath);
});

test("the CommonJS build works against a real server", async () => {
  const cjs = require("@enterprise-ai/sdk") as Sdk;
  assert.equal(cjs.VERSION, esm.VERSION);
  assert.notEqual(cjs.EnterpriseAI, esm.EnterpriseAI, "two builds, two classes");
  assert.equal(cjs.default, cjs.EnterpriseAI);

  const client = new cjs.EnterpriseAI({ baseUrl: server.url, apiKey: server.adminKey });
  const me = await client.auth.whoami();
  assert.equal(me.role, "platform_admin");

  const bad = new cjs.EnterpriseAI({ baseUrl: server.url, apiKey: "eai_live_not-a-real-key-0000000000", maxRetries: 0 });
  await assert.rejects(bad.auth.whoami(), (e: unknown) => {
    assert.ok(e instanceof cjs.AuthenticationError);
    assert.ok(e instanceof cjs.EnterpriseAIError);
    assert.equal(e.status, 401);
    return true;
  });
});
