/**
 * The official Java SDK of eai-gpu, the on-prem GPU accounting and chargeback service (API v1).
 *
 * <p>Start with {@link ai.enterprise.eai.EnterpriseAIClient#builder()}. Errors are
 * {@link ai.enterprise.eai.EnterpriseAIException} subclasses, one per error code of the contract; the API's
 * shapes are records of {@link ai.enterprise.eai.model}; {@link ai.enterprise.eai.usage.UsageEmitter} batches
 * usage events in the background.
 */
package ai.enterprise.eai;
