import type { ErrorCode, FieldError } from "./types.js";

/**
 * Codes the SDK itself gives to failures that carry no error envelope: no answer (`connection_error`, `timeout`)
 * or an answer that is not the API's JSON envelope (`invalid_response`, e.g. a load balancer's HTML 502).
 */
export type ClientErrorCode = "connection_error" | "timeout" | "invalid_response";

/**
 * An error code: one of the contract's ({@link ErrorCode}), one the SDK gives ({@link ClientErrorCode}), or one a
 * newer server sends that this SDK does not know yet (kept as sent, on the base class).
 */
export type AnyErrorCode = ErrorCode | ClientErrorCode | "idempotency_key_reused" | "idempotency_key_in_flight" | (string & {});

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
  code: AnyErrorCode;
  message: string;
  status?: number | undefined;
  messageI18n?: { en: string; fr: string } | undefined;
  requestId?: string | undefined;
  details?: FieldError[] | null | undefined;
  headers?: Record<string, string> | undefined;
  body?: string | undefined;
  cause?: unknown;
}

/**
 * Base class of every error the SDK throws for a call: the API's error envelope
 * (`{"error": {code, message, message_i18n, details, request_id}}`) or a failure to get an answer.
 *
 * Match on the subclass (`instanceof NotFoundError`) or on `code`.
 */
export class EnterpriseAIError extends Error {
  /**
   * The envelope's `code` (`not_found`, `validation_error`, …, or a code this SDK does not know, as sent) or a
   * client code (`connection_error`, `timeout`, `invalid_response`).
   */
  readonly code: AnyErrorCode;
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
  /** The answer's body as it came (the JSON envelope's text, or a proxy's HTML page); `undefined` without an answer. */
  readonly body: string | undefined;
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
    this.body = init.body;
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
/** 403 `tenant_required`: a tenant role without a tenant (a permission error too). */
export class TenantRequiredError extends PermissionDeniedError {}
/** 404 `not_found`: no such resource (or an unknown tenant slug in `tenant`). */
export class NotFoundError extends EnterpriseAIError {}
/** 405 `method_not_allowed`: the path exists, not with this method (only reachable through `client.request`). */
export class MethodNotAllowedError extends EnterpriseAIError {}
/**
 * 409 `conflict`: the request contradicts the stored state (a registered slug, a revoked key, …). Also
 * `idempotency_key_in_flight` (the first call with this `Idempotency-Key` is still running; the SDK retries it
 * after its `Retry-After`).
 */
export class ConflictError extends EnterpriseAIError {}
/**
 * 409 `idempotency_key_reused`: this `Idempotency-Key` was used before with another body (a conflict error too).
 * Only a caller's own `idempotencyKey` can meet it: the SDK's keys are fresh per call.
 */
export class IdempotencyKeyReusedError extends ConflictError {}
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

/**
 * Error code -> class: `error_kinds` of `contracts/v1/sdk/behaviour.json`. A code not here is the base
 * {@link EnterpriseAIError} (kind `api_error`), its code kept as sent.
 */
const CLASSES: Record<string, new (init: ErrorInit) => EnterpriseAIError> = {
  unauthorized: AuthenticationError,
  forbidden: PermissionDeniedError,
  tenant_required: TenantRequiredError,
  not_found: NotFoundError,
  method_not_allowed: MethodNotAllowedError,
  payload_too_large: PayloadTooLargeError,
  conflict: ConflictError,
  idempotency_key_reused: IdempotencyKeyReusedError,
  idempotency_key_in_flight: ConflictError,
  validation_error: ValidationError,
  rate_limited: RateLimitError,
  internal: InternalServerError,
  unavailable: ServiceUnavailableError,
  budget_exceeded: BudgetExceededError,
} satisfies Record<ErrorCode, new (init: ErrorInit) => EnterpriseAIError> & Record<string, new (init: ErrorInit) => EnterpriseAIError>;

/** The statuses a call is retried on (`retried.statuses` of behaviour.json). */
const RETRIED_STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504]);
/** The codes of a 409 a call is retried on (`retried.codes_on_409`). */
const RETRIED_CONFLICT_CODES: ReadonlySet<string> = new Set(["idempotency_key_in_flight"]);

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

/**
 * @internal The error of a non-2xx answer: the class of the envelope's code; for a code this SDK does not know,
 * or an answer that is no envelope (an HTML page from a proxy), the base class, keeping status, code, message,
 * request id and body.
 */
export function errorFromResponse(status: number, headers: Record<string, string>, text: string): EnterpriseAIError {
  let parsed: unknown;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const requestIdHeader = headers["x-request-id"];
  if (isEnvelope(parsed) && typeof parsed.error.code === "string") {
    const e = parsed.error;
    const code = e.code as string;
    const i18n = e.message_i18n as { en?: unknown; fr?: unknown } | undefined;
    const cls = Object.hasOwn(CLASSES, code) ? CLASSES[code]! : EnterpriseAIError;
    return new cls({
      code,
      status,
      message: typeof e.message === "string" ? e.message : `HTTP ${status}`,
      messageI18n:
        i18n && typeof i18n.en === "string" && typeof i18n.fr === "string" ? { en: i18n.en, fr: i18n.fr } : undefined,
      requestId: typeof e.request_id === "string" ? e.request_id : requestIdHeader,
      details: Array.isArray(e.details) ? (e.details as FieldError[]) : null,
      headers,
      body: text,
    });
  }
  // No envelope (a proxy's page, an empty body): the base class, code `invalid_response`.
  const snippet = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  const message = `HTTP ${status}${snippet ? `: ${snippet}` : ""}`;
  return new EnterpriseAIError({ code: "invalid_response", status, message, requestId: requestIdHeader, headers, body: text });
}

/**
 * True when the SDK retries this error (`retried` of behaviour.json): no answer (connection refused or reset, a
 * lost answer, a timeout), a status 408, 429, 500, 502, 503 or 504, or a 409 `idempotency_key_in_flight`. Every
 * call carries an idempotency key (every POST and DELETE) or is a read, so each of them is safe to send again.
 */
export function isRetryable(error: unknown): boolean {
  if (error instanceof APIConnectionError) return true;
  if (error instanceof EnterpriseAIError && error.status !== undefined) {
    if (RETRIED_STATUSES.has(error.status)) return true;
    return error.status === 409 && RETRIED_CONFLICT_CODES.has(error.code);
  }
  return false;
}
