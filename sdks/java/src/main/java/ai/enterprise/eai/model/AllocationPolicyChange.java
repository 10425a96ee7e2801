package ai.enterprise.eai.model;

/**
 * The answer to superseding or disabling a policy: the policy as closed and the one opened in its place (same
 * transaction).
 *
 * @param closed the policy, now closed at the change's instant
 * @param opened its replacement (a disabled copy for a disable)
 */
public record AllocationPolicyChange(AllocationPolicy closed, AllocationPolicy opened) {}
