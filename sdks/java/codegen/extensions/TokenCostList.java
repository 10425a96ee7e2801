import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Lists never null.
 *
 * @param from start
 * @param to end
 * @param basis the basis
 * @param aggregate the aggregate
 * @param items the rows
 */
public TokenCostList {
    items = items == null ? List.of() : List.copyOf(items);
}

/**
 * The first row of a deployment.
 *
 * @param deploymentId the deployment
 * @return its row, if any
 */
public Optional<TokenCost> deployment(String deploymentId) {
    return items.stream().filter(r -> Objects.equals(r.deploymentId(), deploymentId)).findFirst();
}

/**
 * The first row of a tenant ({@code aggregate=tenant}).
 *
 * @param tenantId the tenant's uuid
 * @return its row, if any
 */
public Optional<TokenCost> tenant(String tenantId) {
    return items.stream().filter(r -> Objects.equals(r.tenantId(), tenantId)).findFirst();
}

/**
 * The first row of a model ({@code aggregate=model}).
 *
 * @param model the model's name
 * @return its row, if any
 */
public Optional<TokenCost> model(String model) {
    return items.stream().filter(r -> Objects.equals(r.model(), model)).findFirst();
}
