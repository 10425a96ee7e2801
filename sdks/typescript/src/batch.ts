import type { RequestOptions } from "./client.js";
import { EnterpriseAIError, PayloadTooLargeError } from "./errors.js";
import type { FieldError } from "./types.js";
import { requestIdOf, withRequestId } from "./util.js";

/** @internal How a list is cut into requests. */
export interface BatchPlan<T, R> {
  /** The records, already normalised (ids and timestamps chosen). */
  records: T[];
  /** Records per request at most. */
  maxBatchSize: number;
  /** Halve a batch the server refused with 413 `payload_too_large` and send the halves. */
  splitOnPayloadTooLarge: boolean;
  /** Sends one batch, the `n`th request of the call (0, 1, …). */
  send: (batch: T[], n: number) => Promise<R>;
  /** Adds one batch's answer into the running total. */
  merge: (total: R, next: R) => R;
  /** The total before any batch. */
  zero: () => R;
}

/**
 * @internal Sends `records` in consecutive batches of at most `maxBatchSize`, in order, one at a time. A batch
 * of more than one record that the server refuses with 413 (a 413 stores nothing) is halved and the halves
 * sent in turn. Returns the merged answer; on failure, the error carries `batch` (where it stopped) and its
 * `details[].index` are rebased on the caller's list. The total carries the last answer's request id.
 */
export async function sendInBatches<T, R extends { accepted: number; duplicates?: number }>(
  plan: BatchPlan<T, R>,
): Promise<R> {
  const { records } = plan;
  const size = Math.max(1, Math.floor(plan.maxBatchSize));
  let total = plan.zero();
  let completed = 0;
  let requests = 0;
  let requestId: string | undefined;

  const sendRange = async (start: number, end: number): Promise<void> => {
    try {
      const answer = await plan.send(records.slice(start, end), requests++);
      requestId = requestIdOf(answer) ?? requestId;
      total = plan.merge(total, answer);
      completed += end - start;
    } catch (err) {
      if (err instanceof PayloadTooLargeError && plan.splitOnPayloadTooLarge && end - start > 1) {
        const mid = start + Math.ceil((end - start) / 2);
        await sendRange(start, mid);
        await sendRange(mid, end);
        return;
      }
      if (err instanceof EnterpriseAIError && err.batch === undefined) {
        annotate(err, start, end - start, records.length, completed, total);
      }
      throw err;
    }
  };

  for (let start = 0; start < records.length; start += size) {
    await sendRange(start, Math.min(records.length, start + size));
  }
  return withRequestId(total, requestId);
}

/**
 * @internal The options of request `n` of a batched call: each request is its own call with its own
 * idempotency key (a fresh one, or the caller's key on the first and `<key>-<n+1>` on the others: `key`,
 * `key-2`, `key-3`..., as contracts/v1/sdk/behaviour.json says).
 */
export function partOptions(options: RequestOptions, n: number): RequestOptions {
  const key = options.idempotencyKey;
  if (key === undefined || n === 0) return options;
  return { ...options, idempotencyKey: `${key}-${n + 1}` };
}

function annotate(
  err: EnterpriseAIError,
  offset: number,
  size: number,
  total: number,
  completed: number,
  result: { accepted: number; duplicates?: number },
): void {
  err.batch = { offset, size, total, completed, result: { ...result } };
  if (offset !== 0 && err.details) {
    const rebased = err.details.map((d) => (d.index === undefined ? d : { ...d, index: d.index + offset }));
    (err as { details: FieldError[] | null }).details = rebased;
  }
}
