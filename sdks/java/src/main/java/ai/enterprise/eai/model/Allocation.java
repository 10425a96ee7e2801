package ai.enterprise.eai.model;

import java.time.Instant;
import java.util.List;

/**
 * The GPU cost allocation of a period ({@code GET /v1/finops/gpu/allocation}). A tenant-scoped caller (or a
 * platform key signed in to a tenant) sees only its own items, tenant row and share of each deployment.
 *
 * @param period {@code 2026-10} when the period is exactly one calendar month, else {@code FROM/TO}
 * @param from start of the period (inclusive)
 * @param to end of the period (exclusive)
 * @param items what each tenant is charged for each deployment under each policy
 * @param deployments one row per (deployment, currency)
 * @param tenants one row per (tenant, currency)
 * @param daily cost of each deployment on each UTC day
 * @param gaps spans of GPU series without samples that were not interpolated
 * @param findings what the figures rest on that a FinOps reader should know
 */
public record Allocation(
        String period,
        Instant from,
        Instant to,
        List<AllocationItem> items,
        List<AllocationDeployment> deployments,
        List<AllocationTenant> tenants,
        List<AllocationDaily> daily,
        List<AllocationGap> gaps,
        List<AllocationFinding> findings) {

    /**
     * Lists never null.
     *
     * @param period the period's name
     * @param from its start
     * @param to its end
     * @param items the items
     * @param deployments the deployment rows
     * @param tenants the tenant rows
     * @param daily the daily costs
     * @param gaps the gaps
     * @param findings the findings
     */
    public Allocation {
        items = items == null ? List.of() : List.copyOf(items);
        deployments = deployments == null ? List.of() : List.copyOf(deployments);
        tenants = tenants == null ? List.of() : List.copyOf(tenants);
        daily = daily == null ? List.of() : List.copyOf(daily);
        gaps = gaps == null ? List.of() : List.copyOf(gaps);
        findings = findings == null ? List.of() : List.copyOf(findings);
    }
}
