import {
  APIConnectionError,
  APITimeoutError,
  EnterpriseAIError,
  RateLimitError,
  ServiceUnavailableError,
  errorFromResponse,
  isRetryable,
  parseRetryAfter,
} from "./errors.js";
import { Audit } from "./resources/audit.js";
import { Auth } from "./resources/auth.js";
import { FinOps } from "./resources/finops.js";
import { Providers } from "./resources/providers.js";
import { Tenants } from "./resources/tenants.js";
import { Usage } from "./resources/usage.js";
import { nodeVersion, readEnv, sleep } from "./util.js";
import { VERSION } from "./version.js";

/** A `fetch` implementation: the global one by default (Node >= 18, browsers, Deno, Bun). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

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
  /** Time allowed for one attempt (answer and body), in milliseconds. Default 60000. */
  timeoutMs?: number | undefined;
  /** Retries after the first attempt (network errors, timeouts, 429, 5xx; see the README). Default 2. */
  maxRetries?: number | undefined;
  /** Records per request when ingesting samples or usage events. Default 5000 (the server accepts 10000). */
  maxBatchSize?: number | undefined;
  /** Halve and resend a batch the server refuses with 413 `payload_too_large`. Default true. */
  splitOnPayloadTooLarge?: boolean | undefined;
  /** First backoff step in milliseconds (full jitter: a random wait in [0, base * 2^attempt]). Default 500. */
  retryBaseDelayMs?: number | undefined;
  /** Longest backoff wait in milliseconds. Default 8000. */
  retryMaxDelayMs?: number | undefined;
  /** Longest wait a `Retry-After` header may impose, in milliseconds. Default 60000. */
  maxRetryAfterMs?: number | undefined;
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
  /**
   * Whether sending the request twice has the effect of sending it once (so a lost answer may be retried).
   * Default: true for GET, HEAD, PUT, DELETE and OPTIONS, false for POST and PATCH.
   */
  idempotent?: boolean | undefined;
  /** The `Accept` header. Default `application/json`. */
  accept?: string | undefined;
  /**
   * `"json"` (default): the answer parsed as JSON. `"bytes"`: the answer's body as it came, a `Uint8Array` (a
   * file, such as a FOCUS export); an error answer is still the JSON envelope, thrown as its typed error.
   */
  responseType?: "json" | "bytes" | undefined;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
  bytes: Uint8Array;
}

const DEFAULTS = {
  timeoutMs: 60_000,
  maxRetries: 2,
  maxBatchSize: 5_000,
  retryBaseDelayMs: 500,
  retryMaxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
};

const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]);

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
  /** Longest wait a `Retry-After` may impose, in milliseconds. */
  readonly maxRetryAfterMs: number;

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
   * locale, timeout and retries. The resources use it; it is public for paths the SDK does not wrap yet.
   *
   * @param method HTTP method (`GET`, `POST`, …).
   * @param path A path under the base URL, e.g. `/v1/auth/whoami`.
   * @throws EnterpriseAIError (a subclass per error code), APIConnectionError, APITimeoutError.
   */
  async request<T = unknown>(method: string, path: string, raw: RawRequest = {}, options: RequestOptions = {}): Promise<T> {
    const m = method.toUpperCase();
    const url = this.#url(path, raw.query);
    const body = raw.bodyText !== undefined ? raw.bodyText : raw.body === undefined ? undefined : JSON.stringify(raw.body);
    const headers = this.#headers(options, body !== undefined, raw.accept);
    const idempotent = raw.idempotent ?? !(m === "POST" || m === "PATCH");
    const maxRetries = nonNegativeInt("maxRetries", options.maxRetries, this.maxRetries);
    const timeoutMs = nonNegativeInt("timeoutMs", options.timeoutMs, this.timeoutMs, 1);

    for (let attempt = 0; ; attempt++) {
      let error: EnterpriseAIError;
      try {
        const answer = await this.#attempt(m, url, headers, body, timeoutMs, options.signal);
        if (answer.status >= 200 && answer.status < 300) {
          if (raw.responseType === "bytes") return answer.bytes as T;
          return this.#parse<T>(answer);
        }
        error = errorFromResponse(answer.status, answer.headers, answer.text);
      } catch (e) {
        if (!(e instanceof APIConnectionError)) throw e; // the caller's abort, or a bug
        error = e;
      }
      if (attempt < maxRetries && this.#mayRetry(error, idempotent)) {
        await sleep(this.#delay(error, attempt), options.signal);
        continue;
      }
      error.attempts = attempt + 1;
      throw error;
    }
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
   * 429 and 503 are refusals before any work: always retried. A connection that was never made is too.
   * Other retryable failures (a lost answer, a timeout, another 5xx) are retried only for idempotent calls,
   * so that a creation is never made twice.
   */
  #mayRetry(error: EnterpriseAIError, idempotent: boolean): boolean {
    if (error instanceof RateLimitError || error instanceof ServiceUnavailableError) return true;
    if (error instanceof APIConnectionError && !(error instanceof APITimeoutError)) {
      const code = causeCode(error.cause);
      if (code !== undefined && NOT_SENT_CODES.has(code)) return true;
    }
    return idempotent && isRetryable(error);
  }

  #delay(error: EnterpriseAIError, attempt: number): number {
    const retryAfter = parseRetryAfter(error.headers["retry-after"]);
    if (retryAfter !== undefined && (error.status === 429 || error.status === 503)) {
      return Math.min(retryAfter * 1000, this.maxRetryAfterMs);
    }
    const ceiling = Math.min(this.retryMaxDelayMs, this.retryBaseDelayMs * 2 ** attempt);
    return Math.random() * ceiling; // full jitter
  }
}
