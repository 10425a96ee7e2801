package ai.enterprise.eai.model;

/**
 * Something the figures rest on that a FinOps reader should know.
 *
 * @param code {@code unpriced_samples}, {@code over_attribution}, {@code usage_without_samples},
 *     {@code policy_boundary_inside_rollup}, {@code mixed_currency}, {@code conflicting_duplicate},
 *     {@code equal_gpu_shares} (GPU time resting on GPUs shared by several pods and split equally: samples with
 *     {@link GpuSample#SHARE_METHOD_EQUAL}), or a newer server's code
 * @param message human-readable explanation
 */
public record AllocationFinding(String code, String message) {}
