package ai.enterprise.eai;

import ai.enterprise.eai.model.Catalog;

/** The local inference providers ({@code /v1/providers}). Get it from {@link EnterpriseAIClient#providers()}. */
public final class ProvidersResource extends Resource {

    ProvidersResource(EnterpriseAIClient client, Transport transport) {
        super(client, transport);
    }

    /**
     * The local inference providers: the shared deployments and the caller's tenant's dedicated ones (all of
     * them for platform_admin and usage_reporter) ({@code GET /v1/providers/catalog}).
     *
     * @return the catalog
     * @throws EnterpriseAIException on an error
     */
    public Catalog catalog() {
        return t().call("GET", "/v1/providers/catalog", null, null, true, Catalog.class);
    }
}
