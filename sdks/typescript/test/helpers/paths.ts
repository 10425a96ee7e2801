import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The SDK's package folder (sdks/typescript), found from this file whether compiled or not. */
export const PKG_ROOT: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    const pj = join(dir, "package.json");
    if (existsSync(pj) && JSON.parse(readFileSync(pj, "utf8")).name === "@enterprise-ai/sdk") return dir;
    dir = dirname(dir);
  }
  throw new Error("cannot find the @enterprise-ai/sdk package folder");
})();

/** The repository's root (two levels above the package). */
export const REPO_ROOT: string = resolve(PKG_ROOT, "../..");
