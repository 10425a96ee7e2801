import com.fasterxml.jackson.annotation.JsonCreator;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;

/**
 * Lists never null.
 *
 * @param policyId policy
 * @param currency currency
 * @param gpuSeconds GPU-seconds
 * @param energyWh energy
 * @param gpuTimeCost GPU time cost
 * @param energyCost energy cost
 * @param storageCost storage cost
 * @param cost cost
 * @param parties parts
 * @param idle idle
 */
public Price {
    parties = parties == null ? List.of() : List.copyOf(parties);
}
