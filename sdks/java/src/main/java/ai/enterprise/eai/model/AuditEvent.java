package ai.enterprise.eai.model;

import java.time.Instant;
import java.util.Map;

/**
 * One link of the audit hash chain: every mutation and every authorization decision on a mutation.
 *
 * @param seq position in the chain, from 1, without holes
 * @param occurredAt when the decision was taken
 * @param actor the API key id of the caller ({@code key_3}), {@code system} or {@code anonymous}
 * @param actorRole the role of the actor's key; {@code null} for {@code system} or an unknown caller
 * @param tenantId the tenant of the actor's key (or the tenant it acted as); {@code null} for platform actions
 * @param action what was attempted, e.g. {@code allocation_policy.create}
 * @param decision {@code allow} or {@code deny}
 * @param resource what it applied to ({@code alp_1}, {@code key_5}), when there is one
 * @param requestId {@code X-Request-Id} of the HTTP request; {@code null} for a CLI action
 * @param details facts of the event (never a secret); decimals as {@link java.math.BigDecimal}
 * @param prevHash hash of the previous event (64 zeros for seq 1)
 * @param hash sha256 of this link, lowercase hex
 */
public record AuditEvent(
        long seq,
        Instant occurredAt,
        String actor,
        String actorRole,
        String tenantId,
        String action,
        String decision,
        String resource,
        String requestId,
        Map<String, Object> details,
        String prevHash,
        String hash) {}
