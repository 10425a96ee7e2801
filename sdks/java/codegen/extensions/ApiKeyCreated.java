import java.time.Instant;
import java.util.List;

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
