// dist/cjs holds CommonJS under a "type": "module" package: mark it so for Node and bundlers.
import { writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
writeFileSync(resolve(root, "dist/cjs/package.json"), JSON.stringify({ type: "commonjs" }, null, 2) + "\n");
