import { partOptions, sendInBatches } from "../batch.js";
import type { EnterpriseAI, IngestOptions } from "../client.js";
import { UsageEmitter, type UsageEmitterOptions } from "../emitter.js";
import type { UsageEvent, UsageEventIngestResult, UsageEventInput } from "../types.js";
import type { WithRequestId } from "../util.js";
import { normalizeEvent } from "../normalize.js";

/** `client.usage`: usage events. */
export class Usage {
  #client: EnterpriseAI;

  /** @internal */
  constructor(client: EnterpriseAI) {
    this.#client = client;
  }

  /**
   * Sends usage events (`POST /v1/usage/events`), in batches of at most `maxBatchSize`, and returns the
   * merged answer (`accepted` summed).
   *
   * - An event without `event_id` gets a random UUID (`crypto.randomUUID()`) once, before the first attempt,
   *   and `schema_version` defaults to `"1.0"`: events are upserted by (tenant, event_id), so a retry never
   *   counts twice. Your array and objects are not modified.
   * - A tenant key's events take its tenant; a platform identity (platform_admin, usage_reporter) gives
   *   `tenant_id` in each event.
   * - 413 halving, batch errors and empty lists as for `ingestSamples`.
   *
   * Who: tenant_admin or developer (their tenant), usage_reporter and platform_admin (`tenant_id` in each event).
   *
   * @example
   * await client.usage.events({ events: [{ usage_type: "llm_tokens", source: "gateway", occurred_at: new Date(),
   *   deployment_id: "vllm-llama-70b", units: { tokens_in: 7000, tokens_out: 1200 } }] });
   */
  async events(params: { events: readonly UsageEventInput[] }, options: IngestOptions = {}): Promise<WithRequestId<UsageEventIngestResult>> {
    const events = params?.events;
    if (!Array.isArray(events)) throw new TypeError("usage.events: { events } must be an array");
    return this.send(events.map(normalizeEvent), options);
  }

  /** @internal Sends events already normalised (the emitter's ids are chosen when emitted). */
  send(records: UsageEvent[], options: IngestOptions = {}): Promise<WithRequestId<UsageEventIngestResult>> {
    return sendInBatches<UsageEvent, UsageEventIngestResult>({
      records,
      maxBatchSize: options.maxBatchSize ?? this.#client.maxBatchSize,
      splitOnPayloadTooLarge: options.splitOnPayloadTooLarge ?? this.#client.splitOnPayloadTooLarge,
      zero: () => ({ accepted: 0 }),
      merge: (a, b) => ({ accepted: a.accepted + b.accepted }),
      send: (batch, n) =>
        this.#client._operation<UsageEventIngestResult>("ingestUsageEvents", { body: { events: batch } }, partOptions(options, n)),
    });
  }

  /**
   * An emitter for workers: `emit()` queues an event (its `event_id` chosen at once), and the queue is sent in
   * batches every `flushIntervalMs`, when `maxBatchSize` events wait, on `flush()` and on `close()`.
   * At least once: an event leaves the queue only when the server stored it; a failed batch stays queued and
   * is sent again with the same ids (the server upserts by id, so never twice).
   *
   * @example
   * const emitter = client.usage.emitter({ flushIntervalMs: 2000 });
   * emitter.emit({ usage_type: "llm_tokens", source: "worker", occurred_at: new Date(), units: { tokens_in: 12 } });
   * await emitter.close();
   */
  emitter(options: UsageEmitterOptions = {}): UsageEmitter {
    return new UsageEmitter((events, o) => this.send(events, o), {
      ...options,
      maxBatchSize: options.maxBatchSize ?? this.#client.maxBatchSize,
    });
  }
}
