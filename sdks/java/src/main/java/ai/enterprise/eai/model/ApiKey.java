package ai.enterprise.eai.model;

import java.time.Instant;
import java.util.List;

/**
 * An API key as listed: never its secret nor its hash.
 *
 * @param id public id ({@code key_<n>}), safe to log
 * @param role {@code platform_admin}, {@code finops}, {@code tenant_admin}, {@code auditor}, {@code developer},
 *     {@code viewer}, {@code security_officer}, {@code sampler} or {@code usage_reporter}
 * @param tenantId the tenant the key is bound to, {@code null} for platform identities
 * @param name a label for people
 * @param status {@code active}, {@code expired} or {@code revoked}
 * @param createdAt when it was created
 * @param expiresAt when it expires, or {@code null}
 * @param revokedAt when it was revoked, or {@code null}
 * @param rotatedAt when its secret was last rotated, or {@code null}
 * @param previousSecretValidUntil after a rotation with a grace period: until when the previous secret works
 * @param nodes sampler keys: the nodes it may post samples of; {@code null}: any
 */
public record ApiKey(
        String id,
        String role,
        String tenantId,
        String name,
        String status,
        Instant createdAt,
        Instant expiresAt,
        Instant revokedAt,
        Instant rotatedAt,
        Instant previousSecretValidUntil,
        List<String> nodes) {}
