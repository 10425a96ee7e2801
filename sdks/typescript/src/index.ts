/**
 * `@enterprise-ai/sdk`: the official TypeScript SDK of eai-gpu, the on-prem GPU accounting and chargeback
 * service. Node >= 20 and browsers (global `fetch`), no runtime dependency.
 *
 * @example
 * import { EnterpriseAI } from "@enterprise-ai/sdk";
 * const client = new EnterpriseAI({ baseUrl: "https://eai-gpu.internal", apiKey: process.env.EAI_API_KEY, tenant: "acme" });
 * const october = await client.finops.gpu.allocation({ from: "2026-10-01", to: "2026-10-31" });
 *
 * @packageDocumentation
 */
export { EnterpriseAI } from "./client.js";
export { DEFAULTS } from "./defaults.js";
export type {
  AttemptLog,
  ClientOptions,
  FetchLike,
  IngestOptions,
  LogLevel,
  Logger,
  OperationRequest,
  RawRequest,
  RequestOptions,
} from "./client.js";
export { OPERATIONS } from "./operations.js";
export type { OperationId } from "./operations.js";
export { requestIdOf } from "./util.js";
export type { WithRequestId } from "./util.js";
export {
  APIConnectionError,
  APITimeoutError,
  AuthenticationError,
  BudgetExceededError,
  ConflictError,
  EnterpriseAIError,
  IdempotencyKeyReusedError,
  InternalServerError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RateLimitError,
  ServiceUnavailableError,
  TenantRequiredError,
  ValidationError,
  isRetryable,
} from "./errors.js";
export type { AnyErrorCode, BatchProgress, ClientErrorCode } from "./errors.js";
export { UsageEmitter } from "./emitter.js";
export type { EmitterFailure, UsageEmitterOptions } from "./emitter.js";
export { AllocationPolicies, Budgets, FinOps, FinOpsGpu, Reservations, Statements } from "./resources/finops.js";
export { Audit } from "./resources/audit.js";
export { totalCost } from "./money.js";
export { ApiKeys, Auth } from "./resources/auth.js";
export { Providers } from "./resources/providers.js";
export { Tenants } from "./resources/tenants.js";
export { Usage } from "./resources/usage.js";
export { VERSION } from "./version.js";
export type * from "./types.js";

/** The default export is the client class too: `import EnterpriseAI from "@enterprise-ai/sdk"`. */
export { EnterpriseAI as default } from "./client.js";
