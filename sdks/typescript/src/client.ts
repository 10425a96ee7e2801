import {
  APIConnectionError,
  APITimeoutError,
  EnterpriseAIError,
  errorFromResponse,
  isRetryable,
  parseRetryAfter,
} from "./errors.js";
import { DEFAULTS } from "./defaults.js";
import { OPERATIONS, expandPath, type OperationId } from "./operations.js";
import { Audit } from "./resources/audit.js";
import { Auth } from "./resources/auth.js";
import { FinOps } from "./resources/finops.js";
import { Providers } from "./resources/providers.js";
import { Tenants } from "./resources/tenants.js";
import { Usage } from "./resources/usage.js";
import { nodeVersion, randomUUID, readEnv, sleep, withRequestId } from "./util.js";
import { VERSION } from "./version.js";

/** A `fetch` implementation: the global one by default (Node >= 18, browsers, Deno, Bun). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** The levels of the `logger` option, quietest last. */
export type LogLevel = "debug" | "info" | "warn" | "error" | "off";

/** What the client logs to: `console`, or any object with these methods (pino, winston, …). */
export interface Logger {
  debug(message: string, ...args: unknown[]): void;
  info(message: string, ...args: unknown[]): void;
  warn(message: string, ...args: unknown[]): void;
  error(message: string, ...args: unknown[]): void;
}

/** What one attempt's log line carries (never a header, a body or the API key). */
export interface AttemptLog {
  method: string;
  /** The path, without the query. */
  path: string;
  /** The answer's status; `undefined` when none came (connection error, timeout). */
  status: number | undefined;
  /** 1 for the first attempt. */
  attempt: number;
  /** Milliseconds the client waits before the next attempt; `undefined` when there is none. */
  wait: number | undefined;
  /** The server's request id, when an answer came. */
  requestId: string | undefined;
  /** The error code, when the attempt failed. */
  code: string | undefined;
}

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, off: 100 };

/** How to reach the control plane and how to behave. */
export interface ClientOptions {
  /** The control plane's URL, e.g. `https://eai-gpu.internal:8080`. Default: `EAI_BASE_URL` from the environment. */
  baseUrl?: string | undefined;
  /** The API key (`eai_live_…`). Default: `EAI_API_KEY` from the environment (where `process` exists). */
  apiKey?: string | undefined;
  /**
   * The tenant, by slug (`acme`) or id, every call is signed in to (`X-EAI-Tenant`): a platform_admin's reads
   * become that tenant's; a tenant key may only name its own. Default: none.
   */
  tenant?: string | null | undefined;
  /** The language of error messages (`Accept-Language`): `"en"` (the server's default) or `"fr"`. */
  locale?: string | null | undefined;
  /** Time allowed for one attempt (answer and body), in milliseconds. Default 30000. */
  timeoutMs?: number | undefined;
  /**
   * Retries after the first attempt (no answer, a timeout, 408, 429, 500, 502, 503, 504, 409
   * `idempotency_key_in_flight`; see the README). Default 3.
   */
  maxRetries?: number | undefined;
  /** Records per request when ingesting samples or usage events. Default 5000 (the server accepts 10000). */
  maxBatchSize?: number | undefined;
  /** Halve and resend a batch the server refuses with 413 `payload_too_large`. Default true. */
  splitOnPayloadTooLarge?: boolean | undefined;
  /**
   * First backoff step in milliseconds: before retry n, d = min(base * 2^(n-1), retryMaxDelayMs) and the wait is
   * d/2 + uniform(0, d/2). Default 500.
   */
  retryBaseDelayMs?: number | undefined;
  /** Longest backoff step in milliseconds. Default 8000. */
  retryMaxDelayMs?: number | undefined;
  /**
   * Longest `Retry-After` the client waits for, in milliseconds; an answer asking for longer is raised at once,
   * not retried. Default 60000.
   */
  maxRetryAfterMs?: number | undefined;
  /** Where each attempt is logged (method, path, status, attempt, wait; never a secret). Default `console`. */
  logger?: Logger | undefined;
  /**
   * `"debug"`: every attempt; `"info"`: the attempts that are retried, with the wait; `"warn"` (default, or
   * `EAI_LOG` from the environment), `"error"` and `"off"`: nothing (errors are thrown, not logged).
   */
  logLevel?: LogLevel | undefined;
  /** A `fetch` to use instead of the global one (to add a proxy, a CA, instrumentation, …). */
  fetch?: FetchLike | undefined;
  /** Headers added to every request. */
  defaultHeaders?: Record<string, string> | undefined;
}

/** Options of one call; each overrides the client's. */
export interface RequestOptions {
  /** Time allowed for one attempt, in milliseconds. */
  timeoutMs?: number | undefined;
  /** Retries after the first attempt. */
  maxRetries?: number | undefined;
  /** Aborts the call (and its retries); the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** The tenant for this call (`null`: none, even if the client has one). */
  tenant?: string | null | undefined;
  /** The locale for this call (`null`: the server's default). */
  locale?: string | null | undefined;
  /** Your request id (`X-Request-Id`), echoed by the server and found in its logs and audit trail. */
  requestId?: string | undefined;
  /** Extra headers for this call. */
  headers?: Record<string, string> | undefined;
  /** A W3C trace context (`00-<trace id>-<span id>-<flags>`), sent as the `traceparent` header. */
  traceparent?: string | undefined;
  /**
   * The `Idempotency-Key` of this call (a POST or DELETE), the same on each of its retries. Default: a fresh UUID
   * v4 per call. The server answers a key it has seen with the first answer (and a different body with 409
   * `idempotency_key_reused`). A batched ingest sends this key on its first request and `<key>-<n>` on request n
   * (n = 2, 3, …).
   */
  idempotencyKey?: string | undefined;
}

/** Options of a batched ingest call (`ingestSamples`, `usage.events`). */
export interface IngestOptions extends RequestOptions {
  /** Records per request for this call. */
  maxBatchSize?: number | undefined;
  /** Halve and resend a batch refused with 413 for this call. */
  splitOnPayloadTooLarge?: boolean | undefined;
}

/** A raw call: what `client.request` sends. */
export interface RawRequest {
  /** Query parameters; `undefined` and `null` ones are left out. */
  query?: Record<string, string | number | boolean | null | undefined> | undefined;
  /** A JSON body. */
  body?: unknown;
  /** A body that is JSON text already (a document read from a file or a command), sent as it is instead of `body`. */
  bodyText?: string | undefined;
  /** The `Accept` header. Default `application/json`. */
  accept?: string | undefined;
  /**
   * `"json"` (default): the answer parsed as JSON. `"bytes"`: the answer's body as it came, a `Uint8Array` (a
   * file, such as a FOCUS export). `"text"`: the body as a string (`/metrics`). An error answer is still the JSON
   * envelope, thrown as its typed error.
   */
  responseType?: "json" | "bytes" | "text" | undefined;
}

/** What `client._operation` sends: the path's parameters, and the raw request's query and body. */
export interface OperationRequest extends RawRequest {
  /** The values of the path's `{name}` parameters. */
  params?: Record<string, string> | undefined;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
  bytes: Uint8Array;
}


function nonNegativeInt(name: string, v: number | undefined, dflt: number, min = 0): number {
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !Number.isFinite(v) || v < min) {
    throw new TypeError(`EnterpriseAI: ${name} must be a number >= ${min}, got ${String(v)}`);
  }
  return Math.floor(v);
}

/** The error code of the cause of a failed fetch (`ECONNREFUSED`, …), if any. */
function causeCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let i = 0; i < 4 && cur && typeof cur === "object"; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === "string") return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    const code = causeCode(e);
    const inner = e.cause instanceof Error ? e.cause.message : undefined;
    return [e.message, inner, code && !String(inner).includes(code) ? code : undefined].filter(Boolean).join(": ");
  }
  return String(e);
}

/**
 * The client of the eai-gpu control plane.
 *
 * ```ts
 * const client = new EnterpriseAI({ baseUrl: "https://eai-gpu.internal", apiKey: process.env.EAI_API_KEY, tenant: "acme" });
 * const allocation = await client.finops.gpu.allocation({ from: "2026-10-01", to: "2026-10-31" });
 * ```
 *
 * The API key is kept in a private field: `JSON.stringify(client)`, `console.log(client)` and errors never show it.
 */
export class EnterpriseAI {
  /** The control plane's URL, without a trailing slash. */
  readonly baseUrl: string;
  /** The tenant (slug or id) every call is signed in to, if any. */
  readonly tenant: string | undefined;
  /** The locale of error messages, if set. */
  readonly locale: string | undefined;
  /** Time allowed for one attempt, in milliseconds. */
  readonly timeoutMs: number;
  /** Retries after the first attempt. */
  readonly maxRetries: number;
  /** Records per request when ingesting. */
  readonly maxBatchSize: number;
  /** Whether a batch refused with 413 is halved and resent. */
  readonly splitOnPayloadTooLarge: boolean;
  /** First backoff step, in milliseconds. */
  readonly retryBaseDelayMs: number;
  /** Longest backoff wait, in milliseconds. */
  readonly retryMaxDelayMs: number;
  /** Longest `Retry-After` waited for, in milliseconds. */
  readonly maxRetryAfterMs: number;
  /** The level of the `logger`. */
  readonly logLevel: LogLevel;

  /** GPU samples, cost allocation and allocation policies. */
  readonly finops: FinOps;
  /** The local inference providers. */
  readonly providers: Providers;
  /** Usage events, and an emitter that batches them for workers. */
  readonly usage: Usage;
  /** Tenants: register, list, look up. */
  readonly tenants: Tenants;
  /** The caller's identity and API keys. */
  readonly auth: Auth;
  /** The audit hash chain. */
  readonly audit: Audit;

  #apiKey: string;
  #fetch: FetchLike;
  #defaultHeaders: Record<string, string>;
  #options: ClientOptions;
  #logger: Logger;

  /**
   * @param options See {@link ClientOptions}. `baseUrl` and `apiKey` fall back to `EAI_BASE_URL` and `EAI_API_KEY`.
   * @throws TypeError when there is no base URL or API key, or an option is malformed.
   */
  constructor(options: ClientOptions = {}) {
    const baseUrl = options.baseUrl ?? readEnv("EAI_BASE_URL");
    if (!baseUrl) {
      throw new TypeError("EnterpriseAI: baseUrl is required (or set EAI_BASE_URL)");
    }
    let parsed: URL;
    try {
      parsed = new URL(baseUrl);
    } catch {
      throw new TypeError(`EnterpriseAI: baseUrl is not a URL: ${baseUrl}`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new TypeError(`EnterpriseAI: baseUrl must be http:// or https://, got ${parsed.protocol}`);
    }
    const apiKey = (options.apiKey ?? readEnv("EAI_API_KEY"))?.trim();
    if (!apiKey) {
      throw new TypeError(
        "EnterpriseAI: an API key is required: pass { apiKey } or set the EAI_API_KEY environment variable",
      );
    }
    const custom = options.fetch;
    if (typeof (custom ?? (globalThis as { fetch?: FetchLike }).fetch) !== "function") {
      throw new TypeError("EnterpriseAI: no global fetch; pass { fetch } (Node >= 18 has one)");
    }
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.tenant = options.tenant ?? undefined;
    this.locale = options.locale ?? undefined;
    this.timeoutMs = nonNegativeInt("timeoutMs", options.timeoutMs, DEFAULTS.timeoutMs, 1);
    this.maxRetries = nonNegativeInt("maxRetries", options.maxRetries, DEFAULTS.maxRetries);
    this.maxBatchSize = nonNegativeInt("maxBatchSize", options.maxBatchSize, DEFAULTS.maxBatchSize, 1);
    this.splitOnPayloadTooLarge = options.splitOnPayloadTooLarge ?? true;
    this.retryBaseDelayMs = nonNegativeInt("retryBaseDelayMs", options.retryBaseDelayMs, DEFAULTS.retryBaseDelayMs);
    this.retryMaxDelayMs = nonNegativeInt("retryMaxDelayMs", options.retryMaxDelayMs, DEFAULTS.retryMaxDelayMs);
    this.maxRetryAfterMs = nonNegativeInt("maxRetryAfterMs", options.maxRetryAfterMs, DEFAULTS.maxRetryAfterMs);
    this.#apiKey = apiKey;
    // Called as plain functions (never as a method of the client): browsers' fetch needs that.
    this.#fetch = custom ? (input, init) => custom(input, init) : (input, init) => globalThis.fetch(input, init);
    this.#defaultHeaders = { ...(options.defaultHeaders ?? {}) };
    this.#options = { ...options, apiKey: undefined };
    this.#logger = options.logger ?? console;
    const level = options.logLevel ?? (readEnv("EAI_LOG") as LogLevel | undefined) ?? "warn";
    if (!Object.hasOwn(LEVELS, level)) {
      throw new TypeError(`EnterpriseAI: logLevel must be one of ${Object.keys(LEVELS).join(", ")}, got ${String(level)}`);
    }
    this.logLevel = level;

    this.finops = new FinOps(this);
    this.providers = new Providers(this);
    this.usage = new Usage(this);
    this.tenants = new Tenants(this);
    this.auth = new Auth(this);
    this.audit = new Audit(this);
  }

  /**
   * A client with the same key and options but these overrides, e.g. `client.withOptions({ tenant: "globex" })`.
   */
  withOptions(overrides: ClientOptions): EnterpriseAI {
    return new EnterpriseAI({ ...this.#options, ...overrides, apiKey: overrides.apiKey ?? this.#apiKey });
  }

  /**
   * Sends one call to the API and returns its parsed JSON answer, with the client's authentication, tenant,
   * locale, timeout, retries, idempotency key and errors: the escape hatch for any method and path (the
   * resources and {@link _operation} use it too). The answer's `X-Request-Id` is on an object result as the
   * non-enumerable `_request_id` (see {@link requestIdOf}).
   *
   * @param method HTTP method (`GET`, `POST`, …).
   * @param path A path under the base URL, e.g. `/v1/auth/whoami`.
   * @throws EnterpriseAIError (a subclass per error code), APIConnectionError, APITimeoutError.
   */
  async request<T = unknown>(method: string, path: string, raw: RawRequest = {}, options: RequestOptions = {}): Promise<T> {
    const m = method.toUpperCase();
    const url = this.#url(path, raw.query);
    const logPath = (path.startsWith("/") ? path : `/${path}`).split("?")[0]!;
    const body = raw.bodyText !== undefined ? raw.bodyText : raw.body === undefined ? undefined : JSON.stringify(raw.body);
    const headers = this.#headers(options, body !== undefined, raw.accept);
    // Every call but a read carries a key, the same on each retry: the server does the work once.
    // A key given in `headers` counts as the caller's own; `idempotencyKey` wins over it.
    const given = Object.keys(headers).filter((k) => k.toLowerCase() === "idempotency-key");
    if (m !== "GET" && m !== "HEAD" && (options.idempotencyKey !== undefined || given.length === 0)) {
      for (const k of given) delete headers[k];
      headers["Idempotency-Key"] = options.idempotencyKey ?? randomUUID();
    }
    const maxRetries = nonNegativeInt("maxRetries", options.maxRetries, this.maxRetries);
    const timeoutMs = nonNegativeInt("timeoutMs", options.timeoutMs, this.timeoutMs, 1);

    for (let attempt = 0; ; attempt++) {
      let error: EnterpriseAIError;
      try {
        const answer = await this.#attempt(m, url, headers, body, timeoutMs, options.signal);
        const requestId = answer.headers["x-request-id"];
        if (answer.status >= 200 && answer.status < 300) {
          this.#log("debug", { method: m, path: logPath, status: answer.status, attempt: attempt + 1, wait: undefined, requestId, code: undefined });
          const result =
            raw.responseType === "bytes" ? answer.bytes : raw.responseType === "text" ? answer.text : this.#parse<T>(answer);
          return withRequestId(result, requestId) as T;
        }
        error = errorFromResponse(answer.status, answer.headers, answer.text);
      } catch (e) {
        if (!(e instanceof APIConnectionError)) throw e; // the caller's abort, or a bug
        error = e;
      }
      const wait = attempt < maxRetries ? this.#retryWait(error, attempt + 1) : undefined;
      const line: AttemptLog = {
        method: m,
        path: logPath,
        status: error.status,
        attempt: attempt + 1,
        wait,
        requestId: error.requestId,
        code: error.code,
      };
      if (wait !== undefined) {
        this.#log("info", line);
        await sleep(wait, options.signal);
        continue;
      }
      this.#log("debug", line);
      error.attempts = attempt + 1;
      throw error;
    }
  }

  /**
   * @internal Calls an operation of the contract by its operationId (the table {@link OPERATIONS}): its method,
   * its path with `params` filled in. Every resource method goes through here.
   */
  _operation<T>(operationId: OperationId, req: OperationRequest = {}, options?: RequestOptions): Promise<T> {
    const op = OPERATIONS[operationId];
    const { params, ...raw } = req;
    return this.request<T>(op.method, expandPath(op.path, params), raw, options);
  }

  /** `GET /healthz`: 200 while the process runs. */
  healthz(options?: RequestOptions): Promise<unknown> {
    return this._operation("healthz", {}, options);
  }

  /** `GET /readyz`: 200 once the storage answers (else a `ServiceUnavailableError`). */
  readyz(options?: RequestOptions): Promise<unknown> {
    return this._operation("readyz", {}, options);
  }

  /** `GET /metrics`: the Prometheus text exposition, as a string. */
  metrics(options?: RequestOptions): Promise<string> {
    return this._operation("metrics", { accept: "text/plain", responseType: "text" }, options);
  }

  /** `GET /openapi.json`: the OpenAPI document the server serves. */
  openapi(options?: RequestOptions): Promise<Record<string, unknown>> {
    return this._operation("openapi", {}, options);
  }

  /** What `JSON.stringify(client)` shows: the options, never the API key. */
  toJSON(): Record<string, unknown> {
    return {
      baseUrl: this.baseUrl,
      apiKey: "[redacted]",
      tenant: this.tenant ?? null,
      locale: this.locale ?? null,
      timeoutMs: this.timeoutMs,
      maxRetries: this.maxRetries,
      maxBatchSize: this.maxBatchSize,
      splitOnPayloadTooLarge: this.splitOnPayloadTooLarge,
      logLevel: this.logLevel,
      sdkVersion: VERSION,
    };
  }

  /** What `console.log(client)` / `util.inspect(client)` show in Node: the same as `toJSON()`. */
  [Symbol.for("nodejs.util.inspect.custom")](): Record<string, unknown> {
    return { ...this.toJSON() };
  }

  /** @internal */
  get [Symbol.toStringTag](): string {
    return "EnterpriseAI";
  }

  #url(path: string, query: RawRequest["query"]): string {
    let url = this.baseUrl + (path.startsWith("/") ? path : `/${path}`);
    if (query) {
      const qs = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) {
        if (v !== undefined && v !== null) qs.append(k, String(v));
      }
      const s = qs.toString();
      if (s) url += (url.includes("?") ? "&" : "?") + s;
    }
    return url;
  }

  #headers(options: RequestOptions, hasBody: boolean, accept = "application/json"): Record<string, string> {
    const h: Record<string, string> = {
      Accept: accept,
      ...this.#defaultHeaders,
    };
    const node = nodeVersion();
    if (node) h["User-Agent"] = `eai-typescript-sdk/${VERSION} node/${node}`;
    if (hasBody) h["Content-Type"] = "application/json";
    const tenant = options.tenant === undefined ? this.tenant : options.tenant;
    if (tenant) h["X-EAI-Tenant"] = tenant;
    const locale = options.locale === undefined ? this.locale : options.locale;
    if (locale) h["Accept-Language"] = locale;
    if (options.requestId) h["X-Request-Id"] = options.requestId;
    if (options.traceparent) h["traceparent"] = options.traceparent;
    Object.assign(h, options.headers ?? {});
    h["Authorization"] = `Bearer ${this.#apiKey}`;
    return h;
  }

  async #attempt(
    method: string,
    url: string,
    headers: Record<string, string>,
    body: string | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Answer> {
    if (signal?.aborted) throw signal.reason;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const init: RequestInit = { method, headers, signal: controller.signal };
      if (body !== undefined) init.body = body;
      const res = await this.#fetch(url, init);
      const bytes = new Uint8Array(await res.arrayBuffer());
      const text = new TextDecoder().decode(bytes);
      const h: Record<string, string> = {};
      res.headers.forEach((value, key) => {
        h[key.toLowerCase()] = value;
      });
      return { status: res.status, headers: h, text, bytes };
    } catch (e) {
      if (timedOut) throw new APITimeoutError(timeoutMs);
      if (signal?.aborted) throw signal.reason;
      throw new APIConnectionError({ message: `Connection error: ${describe(e)}`, cause: e });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  #parse<T>(answer: Answer): T {
    if (answer.text === "") return undefined as T;
    try {
      return JSON.parse(answer.text) as T;
    } catch (e) {
      throw new EnterpriseAIError({
        code: "invalid_response",
        status: answer.status,
        message: `The server's answer is not JSON (HTTP ${answer.status})`,
        requestId: answer.headers["x-request-id"],
        headers: answer.headers,
        cause: e,
      });
    }
  }

  /**
   * The wait before retry `n` (1, 2, …) after `error`, or `undefined` when it is not retried
   * (`retried`, `retry_after` and `backoff` of behaviour.json): a `Retry-After` is waited for exactly, unless it
   * is above `maxRetryAfterMs` (then the error is raised at once); else exponential backoff with jitter.
   */
  #retryWait(error: EnterpriseAIError, n: number): number | undefined {
    if (!isRetryable(error)) return undefined;
    const retryAfter = parseRetryAfter(error.headers["retry-after"]);
    if (retryAfter !== undefined) {
      const ms = retryAfter * 1000;
      return ms > this.maxRetryAfterMs ? undefined : ms;
    }
    const d = Math.min(this.retryBaseDelayMs * 2 ** (n - 1), this.retryMaxDelayMs);
    return d / 2 + Math.random() * (d / 2);
  }

  #log(level: "debug" | "info", line: AttemptLog): void {
    if (LEVELS[level] < LEVELS[this.logLevel]) return;
    const what = line.status === undefined ? line.code : String(line.status);
    const next = line.wait === undefined ? "" : `, retrying in ${Math.round(line.wait)} ms`;
    const message = `eai-gpu: ${line.method} ${line.path} -> ${what ?? "?"} (attempt ${line.attempt}${next})`;
    try {
      this.#logger[level](message, line);
    } catch {
      /* a failing logger must not fail the call */
    }
  }
}
