package ai.enterprise.eai.model;

/**
 * The audit chain's newest event: anchor it outside the database
 * ({@code eai-gpu audit verify --expect-head SEQ:HASH}).
 *
 * @param seq its sequence number (0 for an empty chain)
 * @param hash its hash, lowercase hex
 */
public record AuditHead(long seq, String hash) {}
