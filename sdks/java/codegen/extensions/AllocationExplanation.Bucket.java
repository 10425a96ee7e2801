import com.fasterxml.jackson.annotation.JsonCreator;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;

/**
 * Lists never null.
 *
 * @param start start
 * @param owner owner or null
 * @param gpuSeconds GPU-seconds
 * @param estimatedGpuSeconds estimated GPU-seconds
 * @param overAttribution over-attribution
 * @param claims the claims
 * @param priced the prices
 */
public Bucket {
    claims = claims == null ? List.of() : List.copyOf(claims);
    priced = priced == null ? List.of() : List.copyOf(priced);
}
