import java.time.Instant;
import java.util.List;

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
