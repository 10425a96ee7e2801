import type { ErrorCode, FieldError } from "./types.js";

/** Codes the SDK itself gives to failures that carry no error envelope. */
export type ClientErrorCode = "connection_error" | "timeout" | "invalid_response";

/**
 * Where a batched ingest stopped. The batches before `offset` were stored; since sample and usage-event
 * ingest are idempotent, sending the whole list again is always safe.
 */
export interface BatchProgress {
  /** Index, in the caller's list, of the first record of the batch that failed. */
  offset: number;
  /** Records in the batch that failed. */
  size: number;
  /** Records in the caller's list. */
  total: number;
  /** Records stored before the failure (the batches before `offset`). */
  completed: number;
  /** The merged answer of the batches stored before the failure. */
  result: { accepted: number; duplicates?: number };
}

/** What the server answered, kept on an error for diagnostics (never the request or its API key). */
interface ErrorInit {
  code: ErrorCode | ClientErrorCode;
  message: string;
  status?: number | undefined;
  messageI18n?: { en: string; fr: string } | undefined;
  requestId?: string | undefined;
  details?: FieldError[] | null | undefined;
  headers?: Record<string, string> | undefined;
  cause?: unknown;
}

/**
 * Base class of every error the SDK throws for a call: the API's error envelope
 * (`{"error": {code, message, message_i18n, details, request_id}}`) or a failure to get an answer.
 *
 * Match on the subclass (`instanceof NotFoundError`) or on `code`.
 */
export class EnterpriseAIError extends Error {
  /** The envelope's `code` (`not_found`, `validation_error`, …) or a client code (`connection_error`, `timeout`, `invalid_response`). */
  readonly code: ErrorCode | ClientErrorCode;
  /** HTTP status of the answer; `undefined` when no answer came (connection error, timeout). */
  readonly status: number | undefined;
  /** The message in English and French (`message` is in the client's `locale`). */
  readonly messageI18n: { en: string; fr: string } | undefined;
  /** The server's request id (`X-Request-Id`): quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** For `validation_error`: every rejected field (`index` is the record's index in the list you passed). Else `null`. */
  readonly details: FieldError[] | null;
  /** The answer's headers (lower-case names). */
  readonly headers: Record<string, string>;
  /** How many attempts the call made before giving up (1 when it was not retried). */
  attempts = 1;
  /** For a batched ingest (`ingestSamples`, `usage.events`): which batch failed and what was stored before it. */
  batch: BatchProgress | undefined;

  /** @internal Use the subclasses; the SDK builds these from the server's answers. */
  constructor(init: ErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.status = init.status;
    this.messageI18n = init.messageI18n;
    this.requestId = init.requestId;
    this.details = init.details ?? null;
    this.headers = init.headers ?? {};
    this.batch = undefined;
  }

  /** A plain object for logs (code, status, message, request id, details). */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      status: this.status,
      message: this.message,
      messageI18n: this.messageI18n,
      requestId: this.requestId,
      details: this.details,
      attempts: this.attempts,
      batch: this.batch,
    };
  }
}

/** 401 `unauthorized`: no, unknown, expired or revoked API key. */
export class AuthenticationError extends EnterpriseAIError {}
/** 403 `forbidden`: the key's role may not do this, or a tenant key named another tenant in `tenant`. */
export class PermissionDeniedError extends EnterpriseAIError {}
/** 403 `tenant_required`: a tenant role without a tenant. */
export class TenantRequiredError extends EnterpriseAIError {}
/** 404 `not_found`: no such resource (or an unknown tenant slug in `tenant`). */
export class NotFoundError extends EnterpriseAIError {}
/** 405 `method_not_allowed`: the path exists, not with this method (only reachable through `client.request`). */
export class MethodNotAllowedError extends EnterpriseAIError {}
/** 409 `conflict`: the request contradicts the stored state (a registered slug, a revoked key, …). */
export class ConflictError extends EnterpriseAIError {}
/** 413 `payload_too_large`: a batch over the server's limit (the SDK splits it unless told not to). */
export class PayloadTooLargeError extends EnterpriseAIError {}

/** 422 `validation_error`: `details` names every rejected field of every record. */
export class ValidationError extends EnterpriseAIError {
  /** The distinct rejected field names (dotted for nested ones, e.g. `units.tokens_in`), in the order of `details`. */
  get fields(): string[] {
    return [...new Set((this.details ?? []).map((d) => d.field))];
  }
}

/** 429 `rate_limited`: too many requests; `retryAfter` says how many seconds to wait. */
export class RateLimitError extends EnterpriseAIError {
  /** Seconds to wait before trying again (the `Retry-After` header), when the server said. */
  get retryAfter(): number | undefined {
    return parseRetryAfter(this.headers["retry-after"]);
  }
}

/**
 * 402 `budget_exceeded`: a reservation would pass an enforcing budget, and nothing was held. The message names
 * the budget, its limit and what is left; `details` names `estimate.cost` (or `estimate.tokens`).
 */
export class BudgetExceededError extends EnterpriseAIError {}

/** 500 `internal` (or another 5xx without an envelope). */
export class InternalServerError extends EnterpriseAIError {}
/** 503 `unavailable`: the storage is unreachable, or the server is starting or stopping. */
export class ServiceUnavailableError extends EnterpriseAIError {}

/** No answer: connection refused or reset, DNS failure, TLS error, … The call may or may not have been processed. */
export class APIConnectionError extends EnterpriseAIError {
  /** @internal */
  constructor(init: { message?: string; cause?: unknown; code?: ClientErrorCode }) {
    super({
      code: init.code ?? "connection_error",
      message: init.message ?? "Connection error",
      cause: init.cause,
    });
  }
}

/** No answer within `timeoutMs`. */
export class APITimeoutError extends APIConnectionError {
  /** @internal */
  constructor(timeoutMs: number) {
    super({ code: "timeout", message: `Request timed out after ${timeoutMs} ms` });
  }
}

const CLASSES: Record<ErrorCode, new (init: ErrorInit) => EnterpriseAIError> = {
  unauthorized: AuthenticationError,
  forbidden: PermissionDeniedError,
  tenant_required: TenantRequiredError,
  not_found: NotFoundError,
  method_not_allowed: MethodNotAllowedError,
  payload_too_large: PayloadTooLargeError,
  conflict: ConflictError,
  validation_error: ValidationError,
  rate_limited: RateLimitError,
  internal: InternalServerError,
  unavailable: ServiceUnavailableError,
  budget_exceeded: BudgetExceededError,
};

const CODE_OF_STATUS: Record<number, ErrorCode> = {
  401: "unauthorized",
  402: "budget_exceeded",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  409: "conflict",
  413: "payload_too_large",
  422: "validation_error",
  429: "rate_limited",
  500: "internal",
  503: "unavailable",
};

/** Seconds of a `Retry-After` header (delta-seconds or an HTTP date), or undefined. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value == null || value.trim() === "") return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

function isEnvelope(v: unknown): v is { error: Record<string, unknown> } {
  return typeof v === "object" && v !== null && typeof (v as { error?: unknown }).error === "object" &&
    (v as { error?: unknown }).error !== null;
}

/** @internal The error of a non-2xx answer: the envelope's class, else one chosen by the status. */
export function errorFromResponse(status: number, headers: Record<string, string>, text: string): EnterpriseAIError {
  let body: unknown;
  try {
    body = text === "" ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  const requestIdHeader = headers["x-request-id"];
  if (isEnvelope(body) && typeof body.error.code === "string" && body.error.code in CLASSES) {
    const e = body.error;
    const code = e.code as ErrorCode;
    const i18n = e.message_i18n as { en?: unknown; fr?: unknown } | undefined;
    return new CLASSES[code]({
      code,
      status,
      message: typeof e.message === "string" ? e.message : `HTTP ${status}`,
      messageI18n:
        i18n && typeof i18n.en === "string" && typeof i18n.fr === "string" ? { en: i18n.en, fr: i18n.fr } : undefined,
      requestId: typeof e.request_id === "string" ? e.request_id : requestIdHeader,
      details: Array.isArray(e.details) ? (e.details as FieldError[]) : null,
      headers,
    });
  }
  // No envelope (a proxy's page, an empty body): classify by status.
  const code: ErrorCode | undefined = CODE_OF_STATUS[status] ?? (status >= 500 ? "internal" : undefined);
  const snippet = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  const message = `HTTP ${status}${snippet ? `: ${snippet}` : ""}`;
  if (code === undefined) {
    return new EnterpriseAIError({ code: "invalid_response", status, message, requestId: requestIdHeader, headers });
  }
  const cls = status >= 500 && status !== 503 ? InternalServerError : CLASSES[code];
  return new cls({ code, status, message, requestId: requestIdHeader, headers });
}

/**
 * True when sending the same request again later may succeed: no answer (connection error, timeout),
 * 429 `rate_limited`, or a 5xx.
 */
export function isRetryable(error: unknown): boolean {
  if (error instanceof APIConnectionError) return true;
  if (error instanceof EnterpriseAIError) {
    return error.status === 429 || (error.status !== undefined && error.status >= 500);
  }
  return false;
}
