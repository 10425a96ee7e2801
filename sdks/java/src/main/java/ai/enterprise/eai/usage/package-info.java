/**
 * Usage reporting for workers: {@link ai.enterprise.eai.usage.UsageEmitter}, a background batcher of usage
 * events with at-least-once delivery and stable event ids.
 */
package ai.enterprise.eai.usage;
