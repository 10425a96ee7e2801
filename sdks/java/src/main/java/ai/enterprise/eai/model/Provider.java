package ai.enterprise.eai.model;

/**
 * A local inference provider of the catalog.
 *
 * @param id provider kind, e.g. {@code vllm}
 * @param label human-readable name
 * @param local runs on the platform's own GPUs
 * @param baseUrl OpenAI-compatible endpoint of the deployment
 * @param providerId stable id of this entry (uuid)
 * @param enabled whether it is enabled
 * @param discovery {@code api} (seen in GPU samples) or {@code config}
 */
public record Provider(
        String id, String label, boolean local, String baseUrl, String providerId, boolean enabled, String discovery) {}
