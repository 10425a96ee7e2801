package ai.enterprise.eai;

import ai.enterprise.eai.model.ApiKey;
import ai.enterprise.eai.model.ApiKeyCreated;
import ai.enterprise.eai.model.WhoAmI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/** The caller's identity and API keys ({@code /v1/auth}). Get it from {@link EnterpriseAIClient#auth()}. */
public final class AuthResource extends Resource {

    AuthResource(EnterpriseAIClient client, Transport transport) {
        super(client, transport);
    }

    /**
     * The identity behind the client's key: its id, role, tenant, and the tenant it is signed in to
     * ({@code GET /v1/auth/whoami}).
     *
     * @return the identity
     * @throws AuthenticationException when the key is not valid
     * @throws EnterpriseAIException on any other error
     */
    public WhoAmI whoAmI() {
        return t().call(ApiOperation.WHO_AM_I, NO_ARGS, null, null, WhoAmI.class);
    }

    /**
     * Creates an API key ({@code POST /v1/auth/api-keys}; platform_admin). The secret is in the answer only.
     *
     * @param role {@code platform_admin}, {@code finops}, {@code tenant_admin}, {@code auditor},
     *     {@code developer}, {@code viewer}, {@code security_officer}, {@code sampler} or {@code usage_reporter}
     * @param tenantId the tenant the key is bound to: required for every role but platform_admin, sampler and
     *     usage_reporter; else {@code null}
     * @param name a label for people, or {@code null}
     * @return the key, with its secret
     * @throws ValidationException when the role needs a tenant, ...
     * @throws EnterpriseAIException on any other error
     */
    public ApiKeyCreated createApiKey(String role, String tenantId, String name) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("role", Objects.requireNonNull(role, "role"));
        if (tenantId != null) {
            body.put("tenant_id", tenantId);
        }
        if (name != null) {
            body.put("name", name);
        }
        return createApiKey(body);
    }

    /**
     * Creates an API key from a request body ({@code role}, {@code tenant_id}, {@code name},
     * {@code expires_at}, {@code nodes}).
     *
     * @param body the request body
     * @return the key, with its secret
     * @throws EnterpriseAIException on an error
     */
    public ApiKeyCreated createApiKey(Map<String, ?> body) {
        return t().call(ApiOperation.CREATE_API_KEY, NO_ARGS, null, Objects.requireNonNull(body, "body"), ApiKeyCreated.class);
    }

    /**
     * The API keys: every key for platform_admin, its tenant's for tenant_admin; never a secret
     * ({@code GET /v1/auth/api-keys}).
     *
     * @return the keys
     * @throws EnterpriseAIException on an error
     */
    public List<ApiKey> listApiKeys() {
        return t().callItems(ApiOperation.LIST_API_KEYS, NO_ARGS, null, ApiKey.class);
    }

    /**
     * Revokes an API key: the next call with it gets 401 ({@code DELETE /v1/auth/api-keys/{id}}). Idempotent.
     *
     * @param id the key's public id ({@code key_5})
     * @return the key as revoked
     * @throws NotFoundException when there is no such key (or it is another tenant's)
     * @throws EnterpriseAIException on any other error
     */
    public ApiKey revokeApiKey(String id) {
        return t().call(ApiOperation.REVOKE_API_KEY, new String[] {id}, null, null, ApiKey.class);
    }

    /**
     * Gives a key a new secret; the previous one stops working at once ({@code POST
     * /v1/auth/api-keys/{id}/rotate}).
     *
     * @param id the key's public id
     * @return the key with its new secret
     * @throws ConflictException when the key is revoked
     * @throws EnterpriseAIException on any other error
     */
    public ApiKeyCreated rotateApiKey(String id) {
        return rotateApiKey(id, (java.time.Duration) null);
    }

    /**
     * Gives a key a new secret; the previous one keeps working {@code grace} more.
     *
     * @param id the key's public id
     * @param grace how long the previous secret keeps working (whole seconds, at most 7 days), or {@code null}
     *     for none
     * @return the key with its new secret
     * @throws ConflictException when the key is revoked
     * @throws EnterpriseAIException on any other error
     */
    public ApiKeyCreated rotateApiKey(String id, Duration grace) {
        Map<String, Object> body = new LinkedHashMap<>();
        if (grace != null) {
            body.put("grace_seconds", grace.toSeconds());
        }
        return t().call(ApiOperation.ROTATE_API_KEY, new String[] {id}, null, body,
                ApiKeyCreated.class);
    }

    // ------------------------------------------------------------------ the same, with per-request options

    /**
     * The identity behind the client's key: its id, role, tenant, and the tenant it is signed in to
     * ({@code GET /v1/auth/whoami}).
     *
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the identity
     * @throws AuthenticationException when the key is not valid
     * @throws EnterpriseAIException on any other error
     */
    public WhoAmI whoAmI(RequestOptions options) {
        return client.withOptions(options).auth().whoAmI();
    }

    /**
     * Creates an API key ({@code POST /v1/auth/api-keys}; platform_admin). The secret is in the answer only.
     *
     * @param role {@code platform_admin}, {@code finops}, {@code tenant_admin}, {@code auditor},
     *     {@code developer}, {@code viewer}, {@code security_officer}, {@code sampler} or {@code usage_reporter}
     * @param tenantId the tenant the key is bound to: required for every role but platform_admin, sampler and
     *     usage_reporter; else {@code null}
     * @param name a label for people, or {@code null}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the key, with its secret
     * @throws ValidationException when the role needs a tenant, ...
     * @throws EnterpriseAIException on any other error
     */
    public ApiKeyCreated createApiKey(String role, String tenantId, String name, RequestOptions options) {
        return client.withOptions(options).auth().createApiKey(role, tenantId, name);
    }

    /**
     * Creates an API key from a request body ({@code role}, {@code tenant_id}, {@code name},
     * {@code expires_at}, {@code nodes}).
     *
     * @param body the request body
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the key, with its secret
     * @throws EnterpriseAIException on an error
     */
    public ApiKeyCreated createApiKey(Map<String, ?> body, RequestOptions options) {
        return client.withOptions(options).auth().createApiKey(body);
    }

    /**
     * The API keys: every key for platform_admin, its tenant's for tenant_admin; never a secret
     * ({@code GET /v1/auth/api-keys}).
     *
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the keys
     * @throws EnterpriseAIException on an error
     */
    public List<ApiKey> listApiKeys(RequestOptions options) {
        return client.withOptions(options).auth().listApiKeys();
    }

    /**
     * Revokes an API key: the next call with it gets 401 ({@code DELETE /v1/auth/api-keys/{id}}). Idempotent.
     *
     * @param id the key's public id ({@code key_5})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the key as revoked
     * @throws NotFoundException when there is no such key (or it is another tenant's)
     * @throws EnterpriseAIException on any other error
     */
    public ApiKey revokeApiKey(String id, RequestOptions options) {
        return client.withOptions(options).auth().revokeApiKey(id);
    }

    /**
     * Gives a key a new secret; the previous one stops working at once ({@code POST
     * /v1/auth/api-keys/{id}/rotate}).
     *
     * @param id the key's public id
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the key with its new secret
     * @throws ConflictException when the key is revoked
     * @throws EnterpriseAIException on any other error
     */
    public ApiKeyCreated rotateApiKey(String id, RequestOptions options) {
        return client.withOptions(options).auth().rotateApiKey(id);
    }

    /**
     * Gives a key a new secret; the previous one keeps working {@code grace} more.
     *
     * @param id the key's public id
     * @param grace how long the previous secret keeps working (whole seconds, at most 7 days), or {@code null}
     *     for none
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the key with its new secret
     * @throws ConflictException when the key is revoked
     * @throws EnterpriseAIException on any other error
     */
    public ApiKeyCreated rotateApiKey(String id, Duration grace, RequestOptions options) {
        return client.withOptions(options).auth().rotateApiKey(id, grace);
    }
}
