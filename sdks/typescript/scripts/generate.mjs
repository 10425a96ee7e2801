// `npm run generate`: writes src/generated/openapi.ts, the TypeScript types of contracts/v1/openapi.json, with
// openapi-typescript. Every model the SDK exposes (src/types.ts) is an alias of these; `npm run check:generated`
// (scripts/check-generated.mjs, run by test.sh) fails when the committed file is not what this makes today.
import { execFileSync } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const contract = resolve(root, "../../contracts/v1/openapi.json");
export const committed = resolve(root, "src/generated/openapi.ts");

/**
 * The generator's options, in one place for `generate` and `check:generated`. `--empty-objects-unknown`: an object
 * the contract leaves open (sacct's `state`, `time`, `tres`) is `Record<string, unknown>`, not `Record<string, never>`.
 */
export const OPTIONS = ["--empty-objects-unknown"];

/** Runs openapi-typescript on the contract, writing `output`. */
export function generate(output) {
  const cli = resolve(root, "node_modules/openapi-typescript/bin/cli.js");
  execFileSync(process.execPath, [cli, contract, ...OPTIONS, "--output", output], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  generate(committed);
  console.log(`generate: wrote ${committed} from ${contract}`);
}
