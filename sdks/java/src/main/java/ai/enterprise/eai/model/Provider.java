package ai.enterprise.eai.model;

import java.util.List;
import java.util.Optional;

/**
 * A local inference provider of the catalog: a deployment's OpenAI-compatible endpoint.
 *
 * @param id provider kind, e.g. {@code vllm}
 * @param label human-readable name: the registered label, else {@code vLLM (local inference engine)}
 * @param local runs on the platform's own GPUs
 * @param baseUrl OpenAI-compatible endpoint of the deployment: the registered one, else
 *     {@code http://<deployment_id>:8000/v1}
 * @param providerId stable id of this entry (uuid)
 * @param enabled whether it is enabled
 * @param discovery {@link #DISCOVERY_API} (registered and confirmed by its model list), {@link #DISCOVERY_CONFIG}
 *     (registered, not confirmed) or {@link #DISCOVERY_SAMPLES} (only seen in GPU samples)
 * @param deploymentId the deployment this provider serves
 * @param model the model served (the first of {@code models}, else the one its tokens name), or {@code null}
 * @param models the model ids its {@code GET /models} listed when it was confirmed (empty otherwise)
 * @param pricing what its tokens cost over the last closed month, or {@code null} when it served no token then
 */
public record Provider(
        String id,
        String label,
        boolean local,
        String baseUrl,
        String providerId,
        boolean enabled,
        String discovery,
        String deploymentId,
        String model,
        List<String> models,
        ProviderPricing pricing) {

    /** Registered and confirmed by its model list. */
    public static final String DISCOVERY_API = "api";
    /** Registered without confirmation. */
    public static final String DISCOVERY_CONFIG = "config";
    /** Only seen in GPU samples. */
    public static final String DISCOVERY_SAMPLES = "samples";

    /**
     * The list is never null.
     *
     * @param id provider kind
     * @param label human-readable name
     * @param local runs on the platform's own GPUs
     * @param baseUrl OpenAI-compatible endpoint
     * @param providerId stable id of this entry
     * @param enabled whether it is enabled
     * @param discovery how it is known
     * @param deploymentId the deployment
     * @param model the model served, or {@code null}
     * @param models the model ids it listed
     * @param pricing last month's pricing, or {@code null}
     */
    public Provider {
        models = models == null ? List.of() : List.copyOf(models);
    }

    /**
     * The pricing, if it served tokens last month.
     *
     * @return the pricing, or empty
     */
    public Optional<ProviderPricing> pricingIfAny() {
        return Optional.ofNullable(pricing);
    }
}
