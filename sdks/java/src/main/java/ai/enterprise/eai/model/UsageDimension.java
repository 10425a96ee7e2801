package ai.enterprise.eai.model;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * What the rows of a GPU usage breakdown are grouped and filtered by ({@code group_by} and {@code filter} of
 * {@code GET /v1/finops/gpu/usage}), each with the name it goes by on the wire ({@link #wireName()}).
 */
public enum UsageDimension {

    /** The pod's name (group by {@link #NAMESPACE} and {@code POD} to tell namespaces apart): {@code pod}. */
    POD("pod"),
    /** The node: {@code node}. */
    NODE("node"),
    /** The GPU (or MIG slice), by its UUID: {@code gpu}. */
    GPU("gpu"),
    /** The Kubernetes namespace: {@code namespace}. */
    NAMESPACE("namespace"),
    /** The deployment: {@code deployment}. */
    DEPLOYMENT("deployment"),
    /** The owner tenant of a dedicated deployment's time (null for shared time): {@code tenant}. */
    TENANT("tenant"),
    /** The GPU model: {@code model}. */
    MODEL("model");

    private final String wireName;

    UsageDimension(String wireName) {
        this.wireName = wireName;
    }

    /**
     * The name on the wire: a key of {@link GpuUsageRow#group()}, a member of {@code group_by}.
     *
     * @return e.g. {@code pod}
     */
    @JsonValue
    public String wireName() {
        return wireName;
    }

    /**
     * The dimension a wire name names.
     *
     * @param wireName e.g. {@code pod}
     * @return the dimension
     * @throws IllegalArgumentException when no dimension goes by that name
     */
    @JsonCreator
    public static UsageDimension fromWireName(String wireName) {
        for (UsageDimension d : values()) {
            if (d.wireName.equals(wireName)) {
                return d;
            }
        }
        throw new IllegalArgumentException("not a usage dimension: " + wireName);
    }
}
