package ai.enterprise.eai;

import ai.enterprise.eai.model.AuditEvent;
import ai.enterprise.eai.model.AuditHead;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The audit hash chain ({@code /v1/audit}). Get it from {@link EnterpriseAIClient#audit()}. */
public final class AuditResource extends Resource {

    AuditResource(EnterpriseAIClient client, Transport transport) {
        super(client, transport);
    }

    /**
     * The first 100 events of the chain ({@code GET /v1/audit/events}; platform_admin, auditor,
     * security_officer: a tenant's auditor sees its tenant's events).
     *
     * @return the events, oldest first
     * @throws EnterpriseAIException on an error
     */
    public List<AuditEvent> events() {
        return events(0, 100);
    }

    /**
     * A page of the chain: events with {@code seq > after}, oldest first. Page on with {@code after} = the last
     * {@code seq} read.
     *
     * @param after the last seq read (0 for the start)
     * @param limit at most this many events (1..1000)
     * @return the events
     * @throws EnterpriseAIException on an error
     */
    public List<AuditEvent> events(long after, int limit) {
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("after", after);
        q.put("limit", limit);
        return t().callItems(ApiOperation.LIST_AUDIT_EVENTS, NO_ARGS, q, AuditEvent.class);
    }

    /**
     * The chain's newest event, to anchor it outside the database ({@code GET /v1/audit/head}; platform_admin).
     *
     * @return its seq and hash
     * @throws EnterpriseAIException on an error
     */
    public AuditHead head() {
        return t().call(ApiOperation.GET_AUDIT_HEAD, NO_ARGS, null, null, AuditHead.class);
    }

    // ------------------------------------------------------------------ the same, with per-request options

    /**
     * The first 100 events of the chain ({@code GET /v1/audit/events}; platform_admin, auditor,
     * security_officer: a tenant's auditor sees its tenant's events).
     *
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the events, oldest first
     * @throws EnterpriseAIException on an error
     */
    public List<AuditEvent> events(RequestOptions options) {
        return client.withOptions(options).audit().events();
    }

    /**
     * A page of the chain: events with {@code seq > after}, oldest first. Page on with {@code after} = the last
     * {@code seq} read.
     *
     * @param after the last seq read (0 for the start)
     * @param limit at most this many events (1..1000)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the events
     * @throws EnterpriseAIException on an error
     */
    public List<AuditEvent> events(long after, int limit, RequestOptions options) {
        return client.withOptions(options).audit().events(after, limit);
    }

    /**
     * The chain's newest event, to anchor it outside the database ({@code GET /v1/audit/head}; platform_admin).
     *
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return its seq and hash
     * @throws EnterpriseAIException on an error
     */
    public AuditHead head(RequestOptions options) {
        return client.withOptions(options).audit().head();
    }
}
