import java.util.List;
import java.util.Optional;

/**
 * The list is never null.
 *
 * @param items the providers
 */
public Catalog {
    items = items == null ? List.of() : List.copyOf(items);
}

/**
 * The provider of a deployment.
 *
 * @param deploymentId the deployment
 * @return its provider, or empty
 */
public Optional<Provider> deployment(String deploymentId) {
    return items.stream().filter(p -> p.deploymentId().equals(deploymentId)).findFirst();
}
