package ai.enterprise.eai.model;

import java.time.Instant;
import java.util.List;

/**
 * A key just created or rotated: the secret is in this answer only (the server stores its hash).
 * {@link #toString()} never shows the secret.
 *
 * @param id public id ({@code key_<n>}), safe to log
 * @param role the key's role
 * @param tenantId the tenant the key is bound to, {@code null} for platform identities
 * @param name a label for people
 * @param status {@code active}, {@code expired} or {@code revoked}
 * @param createdAt when it was created
 * @param expiresAt when it expires, or {@code null}
 * @param revokedAt when it was revoked, or {@code null}
 * @param rotatedAt when its secret was last rotated, or {@code null}
 * @param previousSecretValidUntil after a rotation with a grace period: until when the previous secret works
 * @param nodes sampler keys: the nodes it may post samples of; {@code null}: any
 * @param key the secret {@code eai_live_...}: store it now, it is never shown again
 */
public record ApiKeyCreated(
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
        List<String> nodes,
        String key) {

    /**
     * The key without its secret.
     *
     * @return the listed form
     */
    public ApiKey withoutSecret() {
        return new ApiKey(
                id, role, tenantId, name, status, createdAt, expiresAt, revokedAt, rotatedAt,
                previousSecretValidUntil, nodes);
    }

    /** Never shows the secret. */
    @Override
    public String toString() {
        return "ApiKeyCreated[id=" + id + ", role=" + role + ", tenantId=" + tenantId + ", name=" + name
                + ", status=" + status + ", createdAt=" + createdAt + ", expiresAt=" + expiresAt
                + ", rotatedAt=" + rotatedAt + ", previousSecretValidUntil=" + previousSecretValidUntil
                + ", nodes=" + nodes + ", key=<redacted>]";
    }
}
