/**
 * The shared behaviour of the four SDKs, `contracts/v1/sdk/behaviour.json` (read from the repository, never a
 * copy), and the fault proxy its cases run through, `scripts/sdk/fault_proxy.py` (started once, in front of a
 * real `eai-gpu serve`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { REPO_ROOT } from "./paths.js";

export const BEHAVIOUR_PATH = join(REPO_ROOT, "contracts", "v1", "sdk", "behaviour.json");
export const FAULT_PROXY_PATH = join(REPO_ROOT, "scripts", "sdk", "fault_proxy.py");

export interface Fault {
  status?: number;
  code?: string;
  retry_after?: string;
  body?: "html";
  drop_answer?: boolean;
  reset?: boolean;
  delay_seconds?: number;
}

export interface Expect {
  outcome: "ok" | "error";
  kind?: string;
  status?: number;
  code?: string;
  attempts: number;
  min_gap_seconds?: number[];
  same_idempotency_key?: boolean;
  distinct_idempotency_keys?: number;
  resources_created?: number;
  request_id_on_result?: boolean;
  header?: Record<string, string>;
  batch_sizes?: number[];
  accepted?: number;
}

export interface Case {
  name: string;
  call: string;
  client?: Record<string, number>;
  request?: { traceparent?: string; idempotency_key?: string; samples?: number; events?: number };
  faults: Fault[];
  expect: Expect;
}

export interface CallSpec {
  body?: unknown;
  record?: Record<string, unknown>;
  count_with?: string;
  default_count?: number;
}

export interface Behaviour {
  defaults: Record<string, number>;
  retried: { transport: string[]; statuses: number[]; codes_on_409: string[] };
  headers: Record<string, string>;
  error_kinds: Record<string, string>;
  error_kind_parents: Record<string, string>;
  cases: Case[];
  calls: Record<string, CallSpec>;
}

export function loadBehaviour(): Behaviour {
  return JSON.parse(readFileSync(BEHAVIOUR_PATH, "utf8")) as Behaviour;
}

/** One request the proxy saw (`GET /__proxy/log`). */
export interface LoggedRequest {
  method: string;
  path: string;
  /** Seconds, monotonic. */
  at: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  records: number | null;
  fault: Fault | null;
  status: number | null;
}

export interface PythonFaultProxy {
  url: string;
  /** Replaces the queue of faults and clears the log. */
  queue(faults: Fault[]): Promise<void>;
  log(): Promise<LoggedRequest[]>;
  stop(): Promise<void>;
}

/** Starts `python3 scripts/sdk/fault_proxy.py --upstream <upstream> --port 0` and reads its "listening on" line. */
export async function startPythonFaultProxy(upstream: string): Promise<PythonFaultProxy> {
  const child: ChildProcess = spawn("python3", [FAULT_PROXY_PATH, "--upstream", upstream, "--port", "0"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => {
    stderr = (stderr + c.toString("utf8")).slice(-5_000);
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  process.on("exit", () => child.kill("SIGKILL"));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fault_proxy.py did not start in 10 s: ${stderr}`)), 10_000);
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      const m = /listening on (http:\/\/\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`fault_proxy.py exited (${String(code)}): ${stderr}`));
    });
  });
  const control = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { "content-type": "application/json" };
    }
    const res = await fetch(url + path, init);
    if (res.status !== 200) throw new Error(`fault proxy ${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  return {
    url,
    queue: async (faults) => {
      await control("POST", "/__proxy/faults", { faults });
    },
    log: async () => ((await control("GET", "/__proxy/log")) as { requests: LoggedRequest[] }).requests,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await exited;
      }
    },
  };
}
