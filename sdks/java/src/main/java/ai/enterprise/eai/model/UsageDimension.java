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
    /**
     * The physical device (a GPU or a MIG instance), by its UUID: {@code gpu}. A GPU shared by several pods
     * (time-slicing, MPS, a shared DRA claim) is one value, and a row grouped by it has its share of the GPU's time
     * ({@link GpuUsageRow#gpuShare()}).
     */
    GPU("gpu"),
    /** The Kubernetes namespace: {@code namespace}. */
    NAMESPACE("namespace"),
    /** The deployment: {@code deployment}. */
    DEPLOYMENT("deployment"),
    /** The owner tenant of a dedicated deployment's time (null for shared time): {@code tenant}. */
    TENANT("tenant"),
    /** The GPU model: {@code model}. */
    MODEL("model"),
    /**
     * How the time's share of its GPU was obtained: {@code share}, valued {@link GpuSample#SHARE_METHOD_EXCLUSIVE},
     * {@link GpuSample#SHARE_METHOD_MIG}, {@link GpuSample#SHARE_METHOD_MEASURED} (from per-process or per-container
     * GPU time) or {@link GpuSample#SHARE_METHOD_EQUAL} (split equally between the pods for want of per-pod data).
     * Group by {@link #POD}, {@link #GPU} and {@code SHARE} to see each pod's share of a shared GPU and how it was
     * measured.
     */
    SHARE("share");

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
