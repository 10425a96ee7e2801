// Removes the folders named on the command line (relative to the package), e.g. `node scripts/clean.mjs dist`.
import { rmSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
for (const name of process.argv.slice(2)) rmSync(resolve(root, name), { recursive: true, force: true });
