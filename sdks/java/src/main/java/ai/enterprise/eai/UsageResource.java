package ai.enterprise.eai;

import ai.enterprise.eai.model.IngestResult;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Usage events ({@code /v1/usage}). Get it from {@link EnterpriseAIClient#usage()}; for workers, see the
 * background batcher {@link ai.enterprise.eai.usage.UsageEmitter}.
 */
public final class UsageResource extends Resource {

    UsageResource(EnterpriseAIClient client, Transport transport) {
        super(client, transport);
    }

    /**
     * Ingests usage events ({@code POST /v1/usage/events}; a tenant's tenant_admin or developer, usage_reporter
     * or platform_admin, which must give {@code tenant_id} in each event).
     *
     * <p>Events are upserted by {@code (tenant, event_id)}: a re-sent event replaces, never doubles. Events
     * without {@code event_id} get a random UUID, without {@code schema_version} {@code "1.0"}, without
     * {@code occurred_at} the current instant, once, before the first attempt; your list and maps are never
     * modified. Batched like {@link FinopsResource#gpuSamples(List)}.
     *
     * @param events {@link ai.enterprise.eai.model.UsageEvent}s, {@code Map<String, ?>}s or other records
     * @return the number accepted, summed over the batches ({@code duplicates} is 0)
     * @throws ValidationException when an event is invalid (indexes are positions in your list)
     * @throws EnterpriseAIException on any other error
     */
    public IngestResult events(List<?> events) {
        return events(events, (IngestOptions) null);
    }

    /**
     * Ingests usage events with per-call batching options; see {@link #events(List)}.
     *
     * @param events {@link ai.enterprise.eai.model.UsageEvent}s, {@code Map<String, ?>}s or other records
     * @param options batch size and 413 behaviour, or {@code null} for the client's
     * @return the number accepted
     * @throws EnterpriseAIException on an error
     */
    public IngestResult events(List<?> events, IngestOptions options) {
        return ingest(events, null, options);
    }

    /**
     * Ingests usage events given as the request body {@code {"events": [...]}}; see {@link #events(List)}.
     *
     * @param body a Map holding {@code "events"}: a List of events
     * @return the number accepted
     * @throws EnterpriseAIException on an error
     */
    public IngestResult events(Map<String, ?> body) {
        Map.Entry<List<?>, Map<String, Object>> parts = Transport.splitBody(body, "events");
        return ingest(parts.getKey(), parts.getValue(), null);
    }

    private IngestResult ingest(List<?> events, Map<String, Object> extra, IngestOptions options) {
        Transport tr = t();
        List<ObjectNode> records = Transport.records(events, "events");
        prepare(records);
        return tr.ingest(ApiOperation.INGEST_USAGE_EVENTS, "events", records, extra, options);
    }

    /**
     * An event as it will be sent: a JSON object with {@code event_id} (a random UUID), {@code schema_version}
     * ({@code "1.0"}) and {@code occurred_at} (now) filled in where absent, {@code defaults} merged under it.
     * Give the result to {@link #events(List)} as many times as needed: it keeps its id, so a re-sent event
     * replaces the stored one. The {@link ai.enterprise.eai.usage.UsageEmitter} uses it to give each event its
     * id once, at {@code emit}.
     *
     * @param event a {@link ai.enterprise.eai.model.UsageEvent}, a {@code Map<String, ?>} or another record
     * @param defaults members to use where the event has none (e.g. {@code source}, {@code tenant_id}), or
     *     {@code null}
     * @return a new JSON object; the arguments are not modified
     * @throws IllegalArgumentException when the event is not a JSON object
     */
    public ObjectNode prepareEvent(Object event, Map<String, ?> defaults) {
        ObjectNode record = Transport.records(List.of(event), "event").get(0);
        if (defaults != null && !defaults.isEmpty()) {
            ObjectNode merged = Transport.records(List.of(defaults), "defaults").get(0);
            record.fields().forEachRemaining(e -> {
                if (!e.getValue().isNull() || !merged.has(e.getKey())) {
                    merged.set(e.getKey(), e.getValue());
                }
            });
            record = merged;
        }
        prepare(List.of(record));
        return record;
    }

    /** Fills {@code event_id}, {@code schema_version} and {@code occurred_at} where absent. */
    static void prepare(List<ObjectNode> records) {
        String now = null;
        for (ObjectNode r : records) {
            if (Transport.lacks(r, "event_id")) {
                r.put("event_id", UUID.randomUUID().toString());
            }
            if (Transport.lacks(r, "schema_version")) {
                r.put("schema_version", "1.0");
            }
            if (Transport.lacks(r, "occurred_at")) {
                if (now == null) {
                    now = Json.now();
                }
                r.put("occurred_at", now);
            }
        }
    }

    // ------------------------------------------------------------------ the same, with per-request options

    /**
     * Ingests usage events ({@code POST /v1/usage/events}; a tenant's tenant_admin or developer, usage_reporter
     * or platform_admin, which must give {@code tenant_id} in each event).
     *
     * <p>Events are upserted by {@code (tenant, event_id)}: a re-sent event replaces, never doubles. Events
     * without {@code event_id} get a random UUID, without {@code schema_version} {@code "1.0"}, without
     * {@code occurred_at} the current instant, once, before the first attempt; your list and maps are never
     * modified. Batched like {@link FinopsResource#gpuSamples(List)}.
     *
     * @param events {@link ai.enterprise.eai.model.UsageEvent}s, {@code Map<String, ?>}s or other records
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the number accepted, summed over the batches ({@code duplicates} is 0)
     * @throws ValidationException when an event is invalid (indexes are positions in your list)
     * @throws EnterpriseAIException on any other error
     */
    public IngestResult events(List<?> events, RequestOptions options) {
        return client.withOptions(options).usage().events(events);
    }

    /**
     * Ingests usage events with per-call batching options; see {@link #events(List)}.
     *
     * @param events {@link ai.enterprise.eai.model.UsageEvent}s, {@code Map<String, ?>}s or other records
     * @param options batch size and 413 behaviour, or {@code null} for the client's
     * @param requestOptions per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the number accepted
     * @throws EnterpriseAIException on an error
     */
    public IngestResult events(List<?> events, IngestOptions options, RequestOptions requestOptions) {
        return client.withOptions(requestOptions).usage().events(events, options);
    }

    /**
     * Ingests usage events given as the request body {@code {"events": [...]}}; see {@link #events(List)}.
     *
     * @param body a Map holding {@code "events"}: a List of events
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the number accepted
     * @throws EnterpriseAIException on an error
     */
    public IngestResult events(Map<String, ?> body, RequestOptions options) {
        return client.withOptions(options).usage().events(body);
    }

    /**
     * An event as it will be sent: a JSON object with {@code event_id} (a random UUID), {@code schema_version}
     * ({@code "1.0"}) and {@code occurred_at} (now) filled in where absent, {@code defaults} merged under it.
     * Give the result to {@link #events(List)} as many times as needed: it keeps its id, so a re-sent event
     * replaces the stored one. The {@link ai.enterprise.eai.usage.UsageEmitter} uses it to give each event its
     * id once, at {@code emit}.
     *
     * @param event a {@link ai.enterprise.eai.model.UsageEvent}, a {@code Map<String, ?>} or another record
     * @param defaults members to use where the event has none (e.g. {@code source}, {@code tenant_id}), or
     *     {@code null}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return a new JSON object; the arguments are not modified
     * @throws IllegalArgumentException when the event is not a JSON object
     */
    public ObjectNode prepareEvent(Object event, Map<String, ?> defaults, RequestOptions options) {
        return client.withOptions(options).usage().prepareEvent(event, defaults);
    }
}
