import type { IngestOptions, RequestOptions } from "./client.js";
import { isRetryable } from "./errors.js";
import { normalizeEvent } from "./normalize.js";
import type { UsageEvent, UsageEventIngestResult, UsageEventInput } from "./types.js";

/** What a failed background flush reports to `onError`. */
export interface EmitterFailure {
  /** The events of the batch that failed. */
  events: UsageEvent[];
  /**
   * True when the batch was dropped from the queue because it can never succeed as is (a 4xx other than 429,
   * e.g. a `ValidationError`); false when it stays queued and will be sent again.
   */
  dropped: boolean;
}

/** How a {@link UsageEmitter} batches. */
export interface UsageEmitterOptions {
  /** Events per request. Default 500. */
  maxBatchSize?: number | undefined;
  /** Flush the queue this often, in milliseconds (the timer does not keep Node alive). 0: only on demand. Default 1000. */
  flushIntervalMs?: number | undefined;
  /** Most events the queue holds; `emit()` throws a `RangeError` beyond. Default 100000. */
  maxQueueSize?: number | undefined;
  /**
   * Called for every batch that fails, with the error and the batch; the only report of the flushes the
   * emitter starts by itself (an explicit `flush()` or `close()` also rejects).
   */
  onError?: ((error: unknown, failure: EmitterFailure) => void) | undefined;
  /** Options of every request the emitter makes (timeout, retries, tenant, …). */
  requestOptions?: RequestOptions | undefined;
}

type Sender = (events: UsageEvent[], options: IngestOptions) => Promise<UsageEventIngestResult>;

/**
 * Batches usage events for a worker, at least once, with stable ids. Made by `client.usage.emitter()`.
 */
export class UsageEmitter {
  #send: Sender;
  #queue: UsageEvent[] = [];
  #maxBatchSize: number;
  #maxQueueSize: number;
  #onError: UsageEmitterOptions["onError"];
  #requestOptions: RequestOptions;
  #timer: ReturnType<typeof setInterval> | undefined;
  #inFlight: Promise<UsageEventIngestResult> | undefined;
  #closed = false;

  /** @internal Use `client.usage.emitter()`. */
  constructor(send: Sender, options: UsageEmitterOptions = {}) {
    this.#send = send;
    this.#maxBatchSize = Math.max(1, Math.floor(options.maxBatchSize ?? 500));
    this.#maxQueueSize = Math.max(1, Math.floor(options.maxQueueSize ?? 100_000));
    this.#onError = options.onError;
    this.#requestOptions = options.requestOptions ?? {};
    const interval = options.flushIntervalMs ?? 1000;
    if (interval > 0) {
      this.#timer = setInterval(() => this.#background(), interval);
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /** Events queued and not yet stored by the server. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Queues an event and returns its `event_id` (yours, or a new UUID). Starts a flush when `maxBatchSize`
   * events wait.
   *
   * @throws Error after `close()`; RangeError when the queue is full (`maxQueueSize`).
   */
  emit(event: UsageEventInput): string {
    if (this.#closed) throw new Error("UsageEmitter: emit() after close()");
    if (this.#queue.length >= this.#maxQueueSize) {
      throw new RangeError(`UsageEmitter: the queue is full (${this.#maxQueueSize} events); flush() first`);
    }
    const e = normalizeEvent(event);
    this.#queue.push(e);
    if (this.#queue.length >= this.#maxBatchSize) this.#background();
    return e.event_id;
  }

  /**
   * Sends every queued event (those emitted while it runs too), batch after batch, and resolves with the
   * merged answer. On failure it rejects; the failed batch stays queued (or, for a request that can never
   * succeed, such as a `ValidationError`, is dropped: see `onError`'s `dropped`).
   */
  flush(): Promise<UsageEventIngestResult> {
    const previous = this.#inFlight ?? Promise.resolve({ accepted: 0 });
    const run = previous.catch(() => ({ accepted: 0 })).then(() => this.#drain());
    const tracked = run.finally(() => {
      if (this.#inFlight === tracked) this.#inFlight = undefined;
    });
    this.#inFlight = tracked;
    return tracked;
  }

  /** Stops the timer, refuses further events and flushes what is queued. */
  async close(): Promise<UsageEventIngestResult> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    return this.flush();
  }

  #background(): void {
    if (this.#inFlight !== undefined || this.#queue.length === 0) return;
    this.flush().catch(() => {
      /* reported through onError by #drain */
    });
  }

  async #drain(): Promise<UsageEventIngestResult> {
    let accepted = 0;
    while (this.#queue.length > 0) {
      const batch = this.#queue.slice(0, this.#maxBatchSize);
      try {
        const r = await this.#send(batch, { ...this.#requestOptions, maxBatchSize: this.#maxBatchSize });
        accepted += r.accepted;
        this.#queue.splice(0, batch.length); // stored: only now do they leave the queue
      } catch (err) {
        const dropped = !isRetryable(err);
        if (dropped) this.#queue.splice(0, batch.length);
        try {
          this.#onError?.(err, { events: batch, dropped });
        } catch {
          /* a throwing onError must not lose the queue */
        }
        throw err;
      }
    }
    return { accepted };
  }
}
