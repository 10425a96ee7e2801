package ai.enterprise.eai;

/**
 * Per-call options of a batched ingest ({@code gpuSamples}, {@code usage().events}); {@code null} members take
 * the client's settings.
 *
 * @param batchSize records per request at most (default: the client's {@code maxBatchSize}, 5,000)
 * @param splitOnPayloadTooLarge whether a batch answered {@code 413 payload_too_large} is halved and re-sent
 *     (default: the client's setting, true)
 */
public record IngestOptions(Integer batchSize, Boolean splitOnPayloadTooLarge) {

    /**
     * Validates the batch size.
     *
     * @param batchSize records per request at most, or {@code null}
     * @param splitOnPayloadTooLarge whether a batch answered 413 is halved and re-sent, or {@code null}
     */
    public IngestOptions {
        if (batchSize != null && batchSize < 1) {
            throw new IllegalArgumentException("batchSize must be >= 1");
        }
    }

    /**
     * The client's settings.
     *
     * @return options that change nothing
     */
    public static IngestOptions defaults() {
        return new IngestOptions(null, null);
    }

    /**
     * These options with another batch size.
     *
     * @param size records per request at most
     * @return new options
     */
    public IngestOptions withBatchSize(int size) {
        return new IngestOptions(size, splitOnPayloadTooLarge);
    }

    /**
     * These options with another 413 behaviour.
     *
     * @param split whether a batch answered 413 is halved and re-sent
     * @return new options
     */
    public IngestOptions withSplitOnPayloadTooLarge(boolean split) {
        return new IngestOptions(batchSize, split);
    }
}
