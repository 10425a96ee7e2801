// Fails when src/generated/openapi.ts is not what openapi-typescript makes of contracts/v1/openapi.json today
// (run `npm run generate` and commit the result). CI runs it.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const contract = resolve(root, "../../contracts/v1/openapi.json");
const committed = resolve(root, "src/generated/openapi.ts");
const dir = mkdtempSync(join(tmpdir(), "eai-sdk-gen-"));
const fresh = join(dir, "openapi.ts");
try {
  const cli = resolve(root, "node_modules/openapi-typescript/bin/cli.js");
  execFileSync(process.execPath, [cli, contract, "--output", fresh], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  const want = readFileSync(fresh, "utf8");
  const have = readFileSync(committed, "utf8");
  if (want !== have) {
    const a = have.split("\n");
    const b = want.split("\n");
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    console.error(`check:generated: src/generated/openapi.ts is stale (first difference at line ${i + 1}):`);
    console.error(`  committed: ${JSON.stringify(a[i] ?? "<end of file>")}`);
    console.error(`  expected:  ${JSON.stringify(b[i] ?? "<end of file>")}`);
    console.error("Run `npm run generate` and commit src/generated/openapi.ts.");
    process.exit(1);
  }
  console.log("check:generated: src/generated/openapi.ts matches contracts/v1/openapi.json");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
