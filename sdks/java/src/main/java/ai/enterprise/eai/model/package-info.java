/**
 * The API's shapes as Java records: typed results of the calls (unknown JSON members are ignored, so a newer
 * server never breaks them) and typed inputs ({@link ai.enterprise.eai.model.GpuSample},
 * {@link ai.enterprise.eai.model.UsageEvent}).
 *
 * <p>Money and every decimal quantity are {@link java.math.BigDecimal}s holding exactly the digits the server
 * wrote ({@code "412.70"} keeps its scale); instants are {@link java.time.Instant}s.
 */
package ai.enterprise.eai.model;
