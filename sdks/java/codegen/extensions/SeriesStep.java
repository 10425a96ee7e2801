import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Lists never null.
 *
 * @param from start
 * @param to end
 * @param totals totals per currency
 * @param tokensIn input tokens
 * @param tokensOut output tokens
 * @param tokens all tokens
 * @param deployments the deployments
 */
public SeriesStep {
    totals = totals == null ? List.of() : List.copyOf(totals);
    deployments = deployments == null ? List.of() : List.copyOf(deployments);
}

/**
 * The step's total in a currency.
 *
 * @param currency ISO 4217 code
 * @return the total, if any
 */
public Optional<SeriesTotal> total(String currency) {
    return totals.stream().filter(t -> currency.equals(t.currency())).findFirst();
}

/**
 * The step's row of a deployment.
 *
 * @param deploymentId the deployment
 * @return the row, if any
 */
public Optional<SeriesDeployment> deployment(String deploymentId) {
    return deployments.stream().filter(d -> deploymentId.equals(d.deploymentId())).findFirst();
}
