import type { IngestOptions, RequestOptions } from "./client.js";
import { DEFAULTS } from "./defaults.js";
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
  /** Events per request. Default: the client's `maxBatchSize` (5000). */
  maxBatchSize?: number | undefined;
  /** Flush the queue this often, in milliseconds (the timer does not keep Node alive). 0: only on demand. Default 1000. */
  flushIntervalMs?: number | undefined;
  /** Most events the queue holds; `emit()` throws a `RangeError` beyond. Default 10000. */
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

/** The emitters with events to send when Node is about to exit. */
const live = new Set<UsageEmitter>();
let exitHookInstalled = false;

/**
 * Node's `beforeExit` (the event loop ran dry, `process.exit()` was not called): each live emitter with pending
 * events flushes them; the flush keeps the loop alive, and `beforeExit` comes again once it is done. An emitter
 * whose exit flush failed does not try again (its `onError` was told).
 */
function installExitHook(): void {
  if (exitHookInstalled) return;
  const p = (globalThis as { process?: { once?: unknown; on?: (e: string, f: () => void) => void } }).process;
  if (typeof p?.on !== "function") return; // a browser: call close() yourself
  exitHookInstalled = true;
  p.on("beforeExit", () => {
    for (const emitter of live) emitter._flushAtExit();
  });
}

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
  #exitFlushFailed = false;
  #flushIntervalMs: number;

  /** @internal Use `client.usage.emitter()`. */
  constructor(send: Sender, options: UsageEmitterOptions = {}) {
    this.#send = send;
    this.#maxBatchSize = Math.max(1, Math.floor(options.maxBatchSize ?? DEFAULTS.maxBatchSize));
    this.#maxQueueSize = Math.max(1, Math.floor(options.maxQueueSize ?? DEFAULTS.usageMaxQueue));
    this.#onError = options.onError;
    this.#requestOptions = options.requestOptions ?? {};
    const interval = options.flushIntervalMs ?? DEFAULTS.flushIntervalMs;
    this.#flushIntervalMs = interval;
    if (interval > 0) {
      this.#timer = setInterval(() => this.#background(), interval);
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /** Events per request. */
  get maxBatchSize(): number {
    return this.#maxBatchSize;
  }

  /** How often the queue is flushed, in milliseconds (0: only on demand). */
  get flushIntervalMs(): number {
    return this.#flushIntervalMs;
  }

  /** Most events the queue holds. */
  get maxQueueSize(): number {
    return this.#maxQueueSize;
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
    this.#exitFlushFailed = false;
    live.add(this);
    installExitHook();
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

  /**
   * Stops the timer, refuses further events and flushes what is queued. Without it, the events still queued
   * when Node's event loop runs dry are flushed at `beforeExit` (not on `process.exit()` or a signal: call
   * `await emitter.close()` in your shutdown handler).
   */
  async close(): Promise<UsageEventIngestResult> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    try {
      return await this.flush();
    } finally {
      if (this.#queue.length === 0) live.delete(this);
    }
  }

  /** @internal Node is about to exit: flush what is pending, once per failure. */
  _flushAtExit(): void {
    if (this.#queue.length === 0) {
      live.delete(this);
      return;
    }
    if (this.#exitFlushFailed || this.#inFlight !== undefined) return;
    this.flush().then(
      () => {
        if (this.#queue.length === 0) live.delete(this);
      },
      () => {
        this.#exitFlushFailed = true; // reported through onError by #drain
      },
    );
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
