import com.fasterxml.jackson.annotation.JsonInclude;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * Units never null; a copy.
 *
 * @param eventId dedup key
 * @param schemaVersion contract version
 * @param tenantId tenant charged
 * @param usageType what was consumed
 * @param source who reports it
 * @param occurredAt when it happened
 * @param deploymentId the deployment used
 * @param model the model used
 * @param units unit name to quantity
 * @param cost cost of the usage
 * @param allocationPolicyId the policy that priced it
 * @param project trace context: project
 * @param agentId trace context: agent
 * @param runId trace context: run
 */
public UsageEvent {
    units = units == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(units));
}

/**
 * A builder.
 *
 * @return an empty builder
 */
public static Builder builder() {
    return new Builder();
}

/** Builds a {@link UsageEvent}. */
public static final class Builder {
    private String eventId;
    private String schemaVersion;
    private String tenantId;
    private String usageType;
    private String source;
    private Instant occurredAt;
    private String deploymentId;
    private Model model;
    private final Map<String, BigDecimal> units = new LinkedHashMap<>();
    private Money cost;
    private String allocationPolicyId;
    private String project;
    private String agentId;
    private String runId;

    private Builder() {}

    /**
     * Sets the dedup key.
     *
     * @param v a uuid; {@code null}: a random one, set by the SDK once
     * @return this builder
     */
    public Builder eventId(String v) {
        eventId = v;
        return this;
    }

    /**
     * Sets the dedup key.
     *
     * @param v a uuid
     * @return this builder
     */
    public Builder eventId(UUID v) {
        eventId = v == null ? null : v.toString();
        return this;
    }

    /**
     * Sets the contract version.
     *
     * @param v {@code "1.0"} (the default)
     * @return this builder
     */
    public Builder schemaVersion(String v) {
        schemaVersion = v;
        return this;
    }

    /**
     * Sets the tenant charged (platform identities must).
     *
     * @param v the tenant's uuid
     * @return this builder
     */
    public Builder tenantId(String v) {
        tenantId = v;
        return this;
    }

    /**
     * Sets what was consumed.
     *
     * @param v e.g. {@code llm_tokens}
     * @return this builder
     */
    public Builder usageType(String v) {
        usageType = v;
        return this;
    }

    /**
     * Sets who reports it.
     *
     * @param v e.g. {@code gateway}, {@code worker}
     * @return this builder
     */
    public Builder source(String v) {
        source = v;
        return this;
    }

    /**
     * Sets when it happened.
     *
     * @param v the instant (sent with millisecond precision); {@code null}: now
     * @return this builder
     */
    public Builder occurredAt(Instant v) {
        occurredAt = v;
        return this;
    }

    /**
     * Sets the deployment used.
     *
     * @param v the deployment id
     * @return this builder
     */
    public Builder deploymentId(String v) {
        deploymentId = v;
        return this;
    }

    /**
     * Sets the model used.
     *
     * @param provider e.g. {@code local}
     * @param name e.g. {@code llama-70b-local}
     * @return this builder
     */
    public Builder model(String provider, String name) {
        model = new Model(provider, name);
        return this;
    }

    /**
     * Adds a unit.
     *
     * @param name 1-64 lowercase letters, digits and {@code _}
     * @param quantity 0..10^15, at most 6 decimal places kept
     * @return this builder
     */
    public Builder unit(String name, BigDecimal quantity) {
        units.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(quantity, "quantity"));
        return this;
    }

    /**
     * Adds a unit.
     *
     * @param name 1-64 lowercase letters, digits and {@code _}
     * @param quantity 0..10^15
     * @return this builder
     */
    public Builder unit(String name, long quantity) {
        return unit(name, BigDecimal.valueOf(quantity));
    }

    /**
     * Adds a unit.
     *
     * @param name 1-64 lowercase letters, digits and {@code _}
     * @param quantity 0..10^15, taken by its shortest decimal form
     * @return this builder
     */
    public Builder unit(String name, double quantity) {
        return unit(name, Decimals.of(quantity));
    }

    /**
     * Sets the cost.
     *
     * @param v the cost, or {@code null}
     * @return this builder
     */
    public Builder cost(Money v) {
        cost = v;
        return this;
    }

    /**
     * Sets the allocation policy that priced it.
     *
     * @param v e.g. {@code alp_1}
     * @return this builder
     */
    public Builder allocationPolicyId(String v) {
        allocationPolicyId = v;
        return this;
    }

    /**
     * Sets the project (trace context).
     *
     * @param v the project
     * @return this builder
     */
    public Builder project(String v) {
        project = v;
        return this;
    }

    /**
     * Sets the agent (trace context).
     *
     * @param v the agent
     * @return this builder
     */
    public Builder agentId(String v) {
        agentId = v;
        return this;
    }

    /**
     * Sets the run (trace context).
     *
     * @param v the run
     * @return this builder
     */
    public Builder runId(String v) {
        runId = v;
        return this;
    }

    /**
     * Builds the event.
     *
     * @return the event
     * @throws NullPointerException when {@code usageType} or {@code source} is missing
     */
    public UsageEvent build() {
        Objects.requireNonNull(usageType, "usageType");
        Objects.requireNonNull(source, "source");
        return new UsageEvent(
                eventId, schemaVersion, tenantId, usageType, source, occurredAt, deploymentId, model, units,
                cost, allocationPolicyId, project, agentId, runId);
    }
}
