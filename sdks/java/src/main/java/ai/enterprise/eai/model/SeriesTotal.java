package ai.enterprise.eai.model;

import java.math.BigDecimal;

/**
 * A currency's amounts in one step of a series, or in the whole series.
 *
 * @param currency ISO 4217 code
 * @param cost the cost
 * @param allocated the part charged to tenants
 * @param unallocated the part no tenant is charged
 */
public record SeriesTotal(String currency, BigDecimal cost, BigDecimal allocated, BigDecimal unallocated) {}
