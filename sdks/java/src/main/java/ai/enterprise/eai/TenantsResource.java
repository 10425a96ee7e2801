package ai.enterprise.eai;

import ai.enterprise.eai.model.Tenant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/** Tenants ({@code /v1/tenants}). Get it from {@link EnterpriseAIClient#tenants()}. */
public final class TenantsResource extends Resource {

    TenantsResource(EnterpriseAIClient client, Transport transport) {
        super(client, transport);
    }

    /**
     * Registers a tenant with a new id ({@code POST /v1/tenants}; platform_admin).
     *
     * @param slug its short name, unique and immutable ({@code acme}: {@code [a-z0-9][a-z0-9-]{0,62}})
     * @param name its display name
     * @return the tenant
     * @throws ConflictException when the slug is registered already
     * @throws EnterpriseAIException on any other error
     */
    public Tenant create(String slug, String name) {
        return create(slug, name, (String) null);
    }

    /**
     * Registers a tenant, naming one already seen in data by its id ({@code POST /v1/tenants}; platform_admin).
     *
     * @param slug its short name, unique and immutable
     * @param name its display name
     * @param id its uuid, or {@code null} for a new one
     * @return the tenant
     * @throws ConflictException when the slug or the id is registered already
     * @throws EnterpriseAIException on any other error
     */
    public Tenant create(String slug, String name, String id) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("slug", Objects.requireNonNull(slug, "slug"));
        body.put("name", Objects.requireNonNull(name, "name"));
        if (id != null) {
            body.put("id", id);
        }
        return create(body);
    }

    /**
     * Registers a tenant from a request body ({@code slug}, {@code name}, optional {@code id}).
     *
     * @param body the request body
     * @return the tenant
     * @throws EnterpriseAIException on an error
     */
    public Tenant create(Map<String, ?> body) {
        return t().call(ApiOperation.CREATE_TENANT, NO_ARGS, null, Objects.requireNonNull(body, "body"), Tenant.class);
    }

    /**
     * The registered tenants, by slug: all of them for platform_admin and usage_reporter, else the caller's own
     * ({@code GET /v1/tenants}).
     *
     * @return the tenants
     * @throws EnterpriseAIException on an error
     */
    public List<Tenant> list() {
        return t().callItems(ApiOperation.LIST_TENANTS, NO_ARGS, null, Tenant.class);
    }

    /**
     * One tenant, by slug or id ({@code GET /v1/tenants/{key}}).
     *
     * @param slugOrId {@code acme} or a uuid
     * @return the tenant
     * @throws NotFoundException when there is none (or it is another tenant's, for a tenant key)
     * @throws EnterpriseAIException on any other error
     */
    public Tenant get(String slugOrId) {
        return t().call(ApiOperation.GET_TENANT, new String[] {slugOrId}, null, null, Tenant.class);
    }

    // ------------------------------------------------------------------ the same, with per-request options

    /**
     * Registers a tenant with a new id ({@code POST /v1/tenants}; platform_admin).
     *
     * @param slug its short name, unique and immutable ({@code acme}: {@code [a-z0-9][a-z0-9-]{0,62}})
     * @param name its display name
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the tenant
     * @throws ConflictException when the slug is registered already
     * @throws EnterpriseAIException on any other error
     */
    public Tenant create(String slug, String name, RequestOptions options) {
        return client.withOptions(options).tenants().create(slug, name);
    }

    /**
     * Registers a tenant, naming one already seen in data by its id ({@code POST /v1/tenants}; platform_admin).
     *
     * @param slug its short name, unique and immutable
     * @param name its display name
     * @param id its uuid, or {@code null} for a new one
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the tenant
     * @throws ConflictException when the slug or the id is registered already
     * @throws EnterpriseAIException on any other error
     */
    public Tenant create(String slug, String name, String id, RequestOptions options) {
        return client.withOptions(options).tenants().create(slug, name, id);
    }

    /**
     * Registers a tenant from a request body ({@code slug}, {@code name}, optional {@code id}).
     *
     * @param body the request body
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the tenant
     * @throws EnterpriseAIException on an error
     */
    public Tenant create(Map<String, ?> body, RequestOptions options) {
        return client.withOptions(options).tenants().create(body);
    }

    /**
     * The registered tenants, by slug: all of them for platform_admin and usage_reporter, else the caller's own
     * ({@code GET /v1/tenants}).
     *
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the tenants
     * @throws EnterpriseAIException on an error
     */
    public List<Tenant> list(RequestOptions options) {
        return client.withOptions(options).tenants().list();
    }

    /**
     * One tenant, by slug or id ({@code GET /v1/tenants/{key}}).
     *
     * @param slugOrId {@code acme} or a uuid
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the tenant
     * @throws NotFoundException when there is none (or it is another tenant's, for a tenant key)
     * @throws EnterpriseAIException on any other error
     */
    public Tenant get(String slugOrId, RequestOptions options) {
        return client.withOptions(options).tenants().get(slugOrId);
    }
}
