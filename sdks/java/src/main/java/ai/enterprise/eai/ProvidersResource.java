package ai.enterprise.eai;

import ai.enterprise.eai.model.Catalog;
import ai.enterprise.eai.model.Provider;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/** The local inference providers ({@code /v1/providers}). Get it from {@link EnterpriseAIClient#providers()}. */
public final class ProvidersResource extends Resource {

    ProvidersResource(EnterpriseAIClient client, Transport transport) {
        super(client, transport);
    }

    /**
     * The local inference providers: the shared deployments and the caller's tenant's dedicated ones (all of
     * them for platform_admin and usage_reporter), each with its last closed month's pricing
     * ({@code GET /v1/providers/catalog}).
     *
     * @return the catalog
     * @throws EnterpriseAIException on an error
     */
    public Catalog catalog() {
        return t().call(ApiOperation.GET_PROVIDERS_CATALOG, NO_ARGS, null, null, Catalog.class);
    }

    /**
     * Registers a deployment's OpenAI-compatible endpoint, confirmed by its model list
     * ({@code POST /v1/providers}; platform_admin): the server first calls {@code GET {baseUrl}/models}.
     *
     * @param deploymentId the deployment it serves
     * @param baseUrl its OpenAI-compatible endpoint, e.g. {@code http://vllm-llama-70b.ai.svc:8000/v1}
     * @return the provider, as the catalog lists it ({@code discovery} {@code api})
     * @throws ValidationException naming {@code base_url} when the URL lists no model
     * @throws EnterpriseAIException on any other error
     */
    public Provider register(String deploymentId, String baseUrl) {
        return register(deploymentId, baseUrl, null, null, null);
    }

    /**
     * Registers a deployment's OpenAI-compatible endpoint ({@code POST /v1/providers}; platform_admin); a new
     * registration of a deployment replaces the previous one.
     *
     * @param deploymentId the deployment it serves
     * @param baseUrl its OpenAI-compatible endpoint
     * @param label a name for people, or {@code null}
     * @param enabled whether it is in use, or {@code null} (true)
     * @param verify {@code null} or true: refuse a URL whose {@code GET /models} lists no model; false: register
     *     it unconfirmed ({@code discovery} {@code config})
     * @return the provider, as the catalog lists it
     * @throws ValidationException naming {@code base_url} when verified and the URL lists no model
     * @throws EnterpriseAIException on any other error
     */
    public Provider register(String deploymentId, String baseUrl, String label, Boolean enabled, Boolean verify) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("deployment_id", Objects.requireNonNull(deploymentId, "deploymentId"));
        body.put("base_url", Objects.requireNonNull(baseUrl, "baseUrl"));
        if (label != null) {
            body.put("label", label);
        }
        if (enabled != null) {
            body.put("enabled", enabled);
        }
        if (verify != null) {
            body.put("verify", verify);
        }
        return register(body);
    }

    /**
     * Registers a provider from a request body ({@code deployment_id}, {@code base_url}, optional {@code label},
     * {@code enabled}, {@code verify}). Retried as idempotent: registering a deployment again replaces it.
     *
     * @param body the request body
     * @return the provider
     * @throws EnterpriseAIException on an error
     */
    public Provider register(Map<String, ?> body) {
        return t().call(ApiOperation.REGISTER_PROVIDER, NO_ARGS, null, Objects.requireNonNull(body, "body"), Provider.class);
    }

    // ------------------------------------------------------------------ the same, with per-request options

    /**
     * The local inference providers: the shared deployments and the caller's tenant's dedicated ones (all of
     * them for platform_admin and usage_reporter), each with its last closed month's pricing
     * ({@code GET /v1/providers/catalog}).
     *
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the catalog
     * @throws EnterpriseAIException on an error
     */
    public Catalog catalog(RequestOptions options) {
        return client.withOptions(options).providers().catalog();
    }

    /**
     * Registers a deployment's OpenAI-compatible endpoint, confirmed by its model list
     * ({@code POST /v1/providers}; platform_admin): the server first calls {@code GET {baseUrl}/models}.
     *
     * @param deploymentId the deployment it serves
     * @param baseUrl its OpenAI-compatible endpoint, e.g. {@code http://vllm-llama-70b.ai.svc:8000/v1}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the provider, as the catalog lists it ({@code discovery} {@code api})
     * @throws ValidationException naming {@code base_url} when the URL lists no model
     * @throws EnterpriseAIException on any other error
     */
    public Provider register(String deploymentId, String baseUrl, RequestOptions options) {
        return client.withOptions(options).providers().register(deploymentId, baseUrl);
    }

    /**
     * Registers a deployment's OpenAI-compatible endpoint ({@code POST /v1/providers}; platform_admin); a new
     * registration of a deployment replaces the previous one.
     *
     * @param deploymentId the deployment it serves
     * @param baseUrl its OpenAI-compatible endpoint
     * @param label a name for people, or {@code null}
     * @param enabled whether it is in use, or {@code null} (true)
     * @param verify {@code null} or true: refuse a URL whose {@code GET /models} lists no model; false: register
     *     it unconfirmed ({@code discovery} {@code config})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the provider, as the catalog lists it
     * @throws ValidationException naming {@code base_url} when verified and the URL lists no model
     * @throws EnterpriseAIException on any other error
     */
    public Provider register(String deploymentId, String baseUrl, String label, Boolean enabled, Boolean verify, RequestOptions options) {
        return client.withOptions(options).providers().register(deploymentId, baseUrl, label, enabled, verify);
    }

    /**
     * Registers a provider from a request body ({@code deployment_id}, {@code base_url}, optional {@code label},
     * {@code enabled}, {@code verify}). Retried as idempotent: registering a deployment again replaces it.
     *
     * @param body the request body
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the provider
     * @throws EnterpriseAIException on an error
     */
    public Provider register(Map<String, ?> body, RequestOptions options) {
        return client.withOptions(options).providers().register(body);
    }
}
