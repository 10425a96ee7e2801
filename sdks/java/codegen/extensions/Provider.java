import java.util.List;
import java.util.Optional;

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
