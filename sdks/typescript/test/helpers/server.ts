/**
 * Starts a REAL `eai-gpu serve` for a test file: a free port, a fresh SQLite data dir, a random bootstrap
 * platform_admin key. The binary comes from EAI_GPU_BIN, else <repo>/target/debug/eai-gpu, else `eai-gpu` on
 * PATH; without one the tests FAIL (they never skip).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, constants, mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { REPO_ROOT } from "./paths.js";

function isExecutableFile(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The eai-gpu binary to test against, or a loud error saying how to provide one. */
export function findServerBinary(): string {
  const fromEnv = process.env.EAI_GPU_BIN;
  if (fromEnv) {
    if (!isExecutableFile(fromEnv)) {
      throw new Error(`EAI_GPU_BIN=${fromEnv} is not an executable file: point it at an eai-gpu server binary`);
    }
    return fromEnv;
  }
  const built = join(REPO_ROOT, "target", "debug", "eai-gpu");
  if (isExecutableFile(built)) return built;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && isExecutableFile(join(dir, "eai-gpu"))) return join(dir, "eai-gpu");
  }
  throw new Error(
    "No eai-gpu server binary: the SDK tests run against a real `eai-gpu serve` and never skip. " +
      `Set EAI_GPU_BIN=/path/to/eai-gpu, build ${built} (cargo build -p eai-gpu), or put eai-gpu on PATH.`,
  );
}

/** A running server. */
export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The bootstrap platform_admin key. */
  adminKey: string;
  dataDir: string;
  /** The server's recent output, for failure messages. */
  logs(): string;
  /** Stops the server and removes its data dir. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});

/** A bootstrap key: `eai_live_` and 32 characters of [A-Za-z0-9_-]. */
export function randomKey(): string {
  return `eai_live_${randomBytes(24).toString("base64url")}`;
}

/** Starts `eai-gpu serve` with these extra environment variables and waits until /readyz answers 200. */
export async function startServer(extraEnv: Record<string, string> = {}): Promise<TestServer> {
  const bin = findServerBinary();
  let lastError: Error | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), "eai-sdk-test-"));
    const adminKey = randomKey();
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      // Nothing of the caller's eai-gpu configuration (EAI_DATABASE_URL, …) may leak into the test server.
      if (v !== undefined && !k.startsWith("EAI_")) env[k] = v;
    }
    Object.assign(env, { EAI_BOOTSTRAP_ADMIN_KEY: adminKey, EAI_DATA_DIR: dataDir }, extraEnv);
    const child = spawn(bin, ["serve", "--listen", `127.0.0.1:${port}`], { env, stdio: ["ignore", "pipe", "pipe"] });
    live.add(child);
    let output = "";
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-20_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    let exited: number | null | undefined;
    const exitPromise = new Promise<void>((resolve) => {
      child.on("exit", (code) => {
        exited = code;
        live.delete(child);
        resolve();
      });
    });
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 30_000;
    let ready = false;
    while (Date.now() < deadline && exited === undefined) {
      try {
        const res = await fetch(`${url}/readyz`);
        await res.text();
        if (res.status === 200) {
          ready = true;
          break;
        }
      } catch {
        /* not listening yet */
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const stop = async () => {
      if (exited === undefined) {
        child.kill("SIGTERM");
        const t = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exitPromise;
        clearTimeout(t);
      }
      rmSync(dataDir, { recursive: true, force: true });
    };
    if (ready) return { url, adminKey, dataDir, logs: () => output, stop };
    await stop();
    lastError = new Error(
      `eai-gpu serve (${bin}) did not become ready on port ${port} (exit code ${String(exited)}):\n${output}`,
    );
    if (!/address|in use/i.test(output)) break; // only a port race is worth another try
  }
  throw lastError ?? new Error("eai-gpu serve did not start");
}
