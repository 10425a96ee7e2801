import com.fasterxml.jackson.annotation.JsonInclude;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.Objects;
import java.util.UUID;

/** {@link #shareMethod()}: one pod, or none, on the GPU (the default). */
public static final String SHARE_METHOD_EXCLUSIVE = "exclusive";

/** {@link #shareMethod()}: a MIG instance, its share its slices. */
public static final String SHARE_METHOD_MIG = "mig";

/** {@link #shareMethod()}: a GPU shared by several pods, each pod's share its measured GPU time. */
public static final String SHARE_METHOD_MEASURED = "measured";

/**
 * {@link #shareMethod()}: a GPU shared by several pods without per-pod data, {@code 1/n} each; an estimate
 * the allocation reports as the finding {@code equal_gpu_shares}.
 */
public static final String SHARE_METHOD_EQUAL = "equal";

/**
 * A sample without {@code shareMethod} (exclusive): the canonical constructor of SDK versions before
 * {@code share_method}, kept for source compatibility.
 *
 * @param node Kubernetes node name
 * @param gpuUuid the GPU, with the MIG instance encoded in it if any
 * @param model GPU model as reported
 * @param namespace Kubernetes namespace of the pod
 * @param pod pod name
 * @param deploymentId the model deployment the pod serves
 * @param tenantId owner tenant (uuid) of a dedicated deployment; {@code null}: a shared deployment
 * @param windowSeconds window length in seconds
 * @param utilization busy fraction {@code 0..1}
 * @param memoryUsedGb GPU memory used, in GiB
 * @param powerW average power over the window, in watts
 * @param timestamp end of the window; {@code null}: now, stamped by the SDK
 * @param storageGb storage held by the pod, in GiB; {@code null}: 0
 * @param gpuFraction share of a physical GPU; {@code null}: 1
 */
public GpuSample(
        String node,
        String gpuUuid,
        String model,
        String namespace,
        String pod,
        String deploymentId,
        String tenantId,
        BigDecimal windowSeconds,
        BigDecimal utilization,
        BigDecimal memoryUsedGb,
        BigDecimal powerW,
        Instant timestamp,
        BigDecimal storageGb,
        BigDecimal gpuFraction) {
    this(node, gpuUuid, model, namespace, pod, deploymentId, tenantId, windowSeconds, utilization, memoryUsedGb,
            powerW, timestamp, storageGb, gpuFraction, null);
}

/**
 * A builder.
 *
 * @return an empty builder
 */
public static Builder builder() {
    return new Builder();
}

/**
 * A builder holding this sample's values, to derive another.
 *
 * @return a builder initialised from this sample
 */
public Builder toBuilder() {
    Builder b = new Builder();
    b.node = node;
    b.gpuUuid = gpuUuid;
    b.model = model;
    b.namespace = namespace;
    b.pod = pod;
    b.deploymentId = deploymentId;
    b.tenantId = tenantId;
    b.windowSeconds = windowSeconds;
    b.utilization = utilization;
    b.memoryUsedGb = memoryUsedGb;
    b.powerW = powerW;
    b.timestamp = timestamp;
    b.storageGb = storageGb;
    b.gpuFraction = gpuFraction;
    b.shareMethod = shareMethod;
    return b;
}

/** Builds a {@link GpuSample}; decimals given as {@code double} are taken by their shortest decimal form. */
public static final class Builder {
    private String node;
    private String gpuUuid;
    private String model;
    private String namespace;
    private String pod;
    private String deploymentId;
    private String tenantId;
    private BigDecimal windowSeconds;
    private BigDecimal utilization;
    private BigDecimal memoryUsedGb;
    private BigDecimal powerW;
    private Instant timestamp;
    private BigDecimal storageGb;
    private BigDecimal gpuFraction;
    private String shareMethod;

    private Builder() {}

    private static BigDecimal dec(double d) {
        return Decimals.of(d);
    }

    /**
     * Sets the node.
     *
     * @param v Kubernetes node name
     * @return this builder
     */
    public Builder node(String v) {
        node = v;
        return this;
    }

    /**
     * Sets the GPU.
     *
     * @param v the GPU's uuid (with the MIG instance if any)
     * @return this builder
     */
    public Builder gpuUuid(String v) {
        gpuUuid = v;
        return this;
    }

    /**
     * Sets the model.
     *
     * @param v GPU model as reported
     * @return this builder
     */
    public Builder model(String v) {
        model = v;
        return this;
    }

    /**
     * Sets the namespace.
     *
     * @param v Kubernetes namespace of the pod
     * @return this builder
     */
    public Builder namespace(String v) {
        namespace = v;
        return this;
    }

    /**
     * Sets the pod.
     *
     * @param v pod name
     * @return this builder
     */
    public Builder pod(String v) {
        pod = v;
        return this;
    }

    /**
     * Sets the deployment.
     *
     * @param v the model deployment the pod serves
     * @return this builder
     */
    public Builder deploymentId(String v) {
        deploymentId = v;
        return this;
    }

    /**
     * Sets the owner tenant of a dedicated deployment.
     *
     * @param v the tenant's uuid, or {@code null} for a shared deployment
     * @return this builder
     */
    public Builder tenantId(String v) {
        tenantId = v;
        return this;
    }

    /**
     * Sets the owner tenant of a dedicated deployment.
     *
     * @param v the tenant's uuid, or {@code null} for a shared deployment
     * @return this builder
     */
    public Builder tenantId(UUID v) {
        tenantId = v == null ? null : v.toString();
        return this;
    }

    /**
     * Sets the window length.
     *
     * @param v seconds, {@code 0 < w <= 3600}
     * @return this builder
     */
    public Builder windowSeconds(BigDecimal v) {
        windowSeconds = v;
        return this;
    }

    /**
     * Sets the window length.
     *
     * @param v seconds, {@code 0 < w <= 3600}
     * @return this builder
     */
    public Builder windowSeconds(double v) {
        return windowSeconds(dec(v));
    }

    /**
     * Sets the utilization.
     *
     * @param v busy fraction 0..1
     * @return this builder
     */
    public Builder utilization(BigDecimal v) {
        utilization = v;
        return this;
    }

    /**
     * Sets the utilization.
     *
     * @param v busy fraction 0..1
     * @return this builder
     */
    public Builder utilization(double v) {
        return utilization(dec(v));
    }

    /**
     * Sets the memory used.
     *
     * @param v GiB
     * @return this builder
     */
    public Builder memoryUsedGb(BigDecimal v) {
        memoryUsedGb = v;
        return this;
    }

    /**
     * Sets the memory used.
     *
     * @param v GiB
     * @return this builder
     */
    public Builder memoryUsedGb(double v) {
        return memoryUsedGb(dec(v));
    }

    /**
     * Sets the average power.
     *
     * @param v watts
     * @return this builder
     */
    public Builder powerW(BigDecimal v) {
        powerW = v;
        return this;
    }

    /**
     * Sets the average power.
     *
     * @param v watts
     * @return this builder
     */
    public Builder powerW(double v) {
        return powerW(dec(v));
    }

    /**
     * Sets the end of the window.
     *
     * @param v the instant (sent with millisecond precision), or {@code null} to let the SDK stamp it
     * @return this builder
     */
    public Builder timestamp(Instant v) {
        timestamp = v;
        return this;
    }

    /**
     * Sets the storage held.
     *
     * @param v GiB
     * @return this builder
     */
    public Builder storageGb(BigDecimal v) {
        storageGb = v;
        return this;
    }

    /**
     * Sets the storage held.
     *
     * @param v GiB
     * @return this builder
     */
    public Builder storageGb(double v) {
        return storageGb(dec(v));
    }

    /**
     * Sets the share of a physical GPU.
     *
     * @param v {@code 0 < f <= 1}
     * @return this builder
     */
    public Builder gpuFraction(BigDecimal v) {
        gpuFraction = v;
        return this;
    }

    /**
     * Sets the share of a physical GPU.
     *
     * @param v {@code 0 < f <= 1}
     * @return this builder
     */
    public Builder gpuFraction(double v) {
        return gpuFraction(dec(v));
    }

    /**
     * Sets how the share of the GPU was obtained.
     *
     * @param v {@link GpuSample#SHARE_METHOD_EXCLUSIVE}, {@link GpuSample#SHARE_METHOD_MIG},
     *     {@link GpuSample#SHARE_METHOD_MEASURED} or {@link GpuSample#SHARE_METHOD_EQUAL}; {@code null}: not
     *     sent (exclusive)
     * @return this builder
     */
    public Builder shareMethod(String v) {
        shareMethod = v;
        return this;
    }

    /**
     * Builds the sample.
     *
     * @return the sample
     * @throws NullPointerException when a required member is missing
     */
    public GpuSample build() {
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(gpuUuid, "gpuUuid");
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(pod, "pod");
        Objects.requireNonNull(deploymentId, "deploymentId");
        Objects.requireNonNull(windowSeconds, "windowSeconds");
        Objects.requireNonNull(utilization, "utilization");
        Objects.requireNonNull(memoryUsedGb, "memoryUsedGb");
        Objects.requireNonNull(powerW, "powerW");
        return new GpuSample(
                node, gpuUuid, model, namespace, pod, deploymentId, tenantId, windowSeconds, utilization,
                memoryUsedGb, powerW, timestamp, storageGb, gpuFraction, shareMethod);
    }
}
