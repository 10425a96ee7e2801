import com.fasterxml.jackson.annotation.JsonCreator;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;

/**
 * Lists never null.
 *
 * @param policyId policy
 * @param idle idle cost
 * @param parties shares
 */
public IdleSpread {
    parties = parties == null ? List.of() : List.copyOf(parties);
}
