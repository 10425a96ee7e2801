import com.fasterxml.jackson.annotation.JsonCreator;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;

/**
 * Lists never null.
 *
 * @param currency currency
 * @param exact exact sum
 * @param cost rounded cost
 * @param lines lines
 */
public Rounding {
    lines = lines == null ? List.of() : List.copyOf(lines);
}
