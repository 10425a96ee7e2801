package ai.enterprise.eai.model;

/**
 * The answer to creating an allocation policy.
 *
 * @param id the new policy's id ({@code alp_<n>})
 * @param status {@code active}, {@code scheduled}, {@code closed} or {@code disabled}
 */
public record AllocationPolicyCreated(String id, String status) {}
