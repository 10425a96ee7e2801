package ai.enterprise.eai.model;

import java.time.LocalDate;

/**
 * Cost of a deployment on one UTC day (the days sum to the deployment's cost).
 *
 * @param date the UTC day
 * @param deploymentId the deployment
 * @param cost its cost that day
 */
public record AllocationDaily(LocalDate date, String deploymentId, Money cost) {}
