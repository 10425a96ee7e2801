package ai.enterprise.eai.model;

/**
 * What an ingest call stored, summed over the requests it made.
 *
 * @param accepted records of the call the server accepted (re-sent duplicates included)
 * @param duplicates of those, GPU samples already stored (same {@code gpu_uuid} and {@code timestamp}): counted
 *     once by the server; always 0 for usage events (a re-sent {@code event_id} replaces the stored event)
 * @param requests successful requests the call made (the list is sent in batches)
 */
public record IngestResult(long accepted, long duplicates, int requests) {

    /**
     * Adds another batch's counts.
     *
     * @param other the result of another batch
     * @return the sum
     */
    public IngestResult plus(IngestResult other) {
        return new IngestResult(
                accepted + other.accepted, duplicates + other.duplicates, requests + other.requests);
    }
}
