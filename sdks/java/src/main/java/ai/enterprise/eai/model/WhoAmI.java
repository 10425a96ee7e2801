package ai.enterprise.eai.model;

/**
 * The identity behind the client's API key ({@code GET /v1/auth/whoami}).
 *
 * @param keyId public id of the key ({@code key_3}), safe to log
 * @param role the key's role
 * @param tenantId the key's tenant, {@code null} for platform identities
 * @param tenant the key's tenant, {@code null} for platform identities
 * @param actingTenant the tenant a platform key is signed in to with {@code X-EAI-Tenant}, else {@code null}
 */
public record WhoAmI(String keyId, String role, String tenantId, Tenant tenant, Tenant actingTenant) {}
