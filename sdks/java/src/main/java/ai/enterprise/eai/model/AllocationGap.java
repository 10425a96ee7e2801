package ai.enterprise.eai.model;

import java.time.Instant;

/**
 * A span of a GPU series with no sample that was not filled (longer than the interpolation limit, or the series
 * changed across it).
 *
 * @param gpuUuid the GPU series
 * @param node its node
 * @param deploymentId its deployment
 * @param from start of the gap
 * @param to end of the gap
 * @param reason {@code too_long} or {@code series_changed}
 */
public record AllocationGap(
        String gpuUuid, String node, String deploymentId, Instant from, Instant to, String reason) {}
