/** The client's defaults, in one place. */

/**
 * The defaults of every client (`defaults` of `contracts/v1/sdk/behaviour.json`, the same in the four SDKs), in
 * the units of the options: milliseconds and counts.
 */
export const DEFAULTS = Object.freeze({
  /** Time allowed for one attempt: 30 s. */
  timeoutMs: 30_000,
  /** Retries after the first attempt. */
  maxRetries: 3,
  /** Backoff before retry n: d = min(500 * 2^(n-1), 8000) ms, a wait of d/2 + uniform(0, d/2). */
  retryBaseDelayMs: 500,
  /** The longest backoff step. */
  retryMaxDelayMs: 8_000,
  /** A `Retry-After` longer than this is not waited for: the error is raised at once. */
  maxRetryAfterMs: 60_000,
  /** Records per request when ingesting samples or usage events. */
  maxBatchSize: 5_000,
  /** The usage emitter's flush interval. */
  flushIntervalMs: 1_000,
  /** The most events a usage emitter queues. */
  usageMaxQueue: 10_000,
});
