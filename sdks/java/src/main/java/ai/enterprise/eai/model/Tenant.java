package ai.enterprise.eai.model;

/**
 * A tenant: registered ({@code POST /v1/tenants}), or as {@code whoami} describes a key's tenant.
 *
 * @param id the tenant's uuid
 * @param slug its short name ({@code acme}); {@code null} in {@code whoami} for a tenant only seen in data
 * @param name its display name; {@code null} in {@code whoami} for a tenant only seen in data
 */
public record Tenant(String id, String slug, String name) {}
