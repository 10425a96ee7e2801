/**
 * The API's shapes as Java records: typed results of the calls (unknown JSON members are ignored, so a newer
 * server never breaks them) and typed inputs ({@link ai.enterprise.eai.model.GpuSample},
 * {@link ai.enterprise.eai.model.UsageEvent}).
 *
 * <p>The results are generated from {@code contracts/v1/openapi.json} by {@code sdks/java/codegen/generate_models.py}
 * (files starting with its "Generated" line; regenerate with {@code python3 sdks/java/codegen/generate_models.py},
 * {@code sdks/java/test.sh} fails when they are stale); their hand-written members (helpers, a redacting
 * {@code toString}, the builders of {@code GpuSample} and {@code UsageEvent}) live in
 * {@code sdks/java/codegen/extensions/}. {@code IngestResult} (the merged counts of a batched ingest),
 * {@code UsageDimension} and {@code Decimals} are hand-written.
 *
 * <p>Money and every decimal quantity are {@link java.math.BigDecimal}s holding exactly the digits the server
 * wrote ({@code "412.70"} keeps its scale); instants are {@link java.time.Instant}s.
 */
package ai.enterprise.eai.model;
