// Fails when src/generated/openapi.ts is not what openapi-typescript makes of contracts/v1/openapi.json today
// (run `npm run generate` and commit the result). CI runs it.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { committed, generate } from "./generate.mjs";

const dir = mkdtempSync(join(tmpdir(), "eai-sdk-gen-"));
const fresh = join(dir, "openapi.ts");
try {
  generate(fresh);
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
