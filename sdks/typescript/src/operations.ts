/**
 * Every operation of the contract (`contracts/v1/openapi.json`) the SDK wraps: operationId -> method and path.
 * The resources call the API only through this table (`client._operation("getTenant", …)`), so it is what the
 * SDK sends. The compiler checks it against the generated types: every operationId of the document has an entry
 * (`keyof operations`), and each entry's path exists in `paths` with that method. The suite checks it against the
 * document itself, both ways, at run time.
 */
import type { operations, paths } from "./generated/openapi.js";

type LowerMethod = "get" | "post" | "put" | "patch" | "delete";

/** A method and path pair the generated `paths` has. */
type ContractRoute = {
  [P in keyof paths]: {
    [M in LowerMethod]: [NonNullable<paths[P][M]>] extends [never] ? never : { method: Uppercase<M>; path: P };
  }[LowerMethod];
}[keyof paths];

/** operationId -> `{ method, path }` of every operation the SDK wraps. */
export const OPERATIONS = {
  ingestGpuSamples: { method: "POST", path: "/v1/finops/gpu/samples" },
  getGpuAllocation: { method: "GET", path: "/v1/finops/gpu/allocation" },
  getGpuAllocationFocus: { method: "GET", path: "/v1/finops/gpu/allocation/focus" },
  explainGpuAllocation: { method: "GET", path: "/v1/finops/gpu/allocation/explain" },
  getGpuUsageBreakdown: { method: "GET", path: "/v1/finops/gpu/usage" },
  getGpuAllocationSeries: { method: "GET", path: "/v1/finops/gpu/allocation/series" },
  getGpuTokenCosts: { method: "GET", path: "/v1/finops/gpu/token-costs" },
  reconcileSlurmJobs: { method: "POST", path: "/v1/finops/gpu/slurm/reconciliation" },
  getGpuRecommendations: { method: "GET", path: "/v1/finops/gpu/recommendations" },
  getGpuForecast: { method: "GET", path: "/v1/finops/gpu/forecast" },
  listGpuAnomalies: { method: "GET", path: "/v1/finops/gpu/anomalies" },
  listGpuStatements: { method: "GET", path: "/v1/finops/gpu/statements" },
  issueGpuStatements: { method: "POST", path: "/v1/finops/gpu/statements" },
  getGpuStatement: { method: "GET", path: "/v1/finops/gpu/statements/{number}" },
  createAllocationPolicy: { method: "POST", path: "/v1/finops/allocation-policies" },
  listAllocationPolicies: { method: "GET", path: "/v1/finops/allocation-policies" },
  getAllocationPolicy: { method: "GET", path: "/v1/finops/allocation-policies/{id}" },
  supersedeAllocationPolicy: { method: "POST", path: "/v1/finops/allocation-policies/{id}/supersede" },
  disableAllocationPolicy: { method: "POST", path: "/v1/finops/allocation-policies/{id}/disable" },
  listBudgets: { method: "GET", path: "/v1/finops/budgets" },
  createBudget: { method: "POST", path: "/v1/finops/budgets" },
  getBudget: { method: "GET", path: "/v1/finops/budgets/{id}" },
  supersedeBudget: { method: "POST", path: "/v1/finops/budgets/{id}/supersede" },
  disableBudget: { method: "POST", path: "/v1/finops/budgets/{id}/disable" },
  createReservation: { method: "POST", path: "/v1/finops/reservations" },
  getReservation: { method: "GET", path: "/v1/finops/reservations/{id}" },
  commitReservation: { method: "POST", path: "/v1/finops/reservations/{id}/commit" },
  releaseReservation: { method: "POST", path: "/v1/finops/reservations/{id}/release" },
  getProvidersCatalog: { method: "GET", path: "/v1/providers/catalog" },
  registerProvider: { method: "POST", path: "/v1/providers" },
  ingestUsageEvents: { method: "POST", path: "/v1/usage/events" },
  createApiKey: { method: "POST", path: "/v1/auth/api-keys" },
  listApiKeys: { method: "GET", path: "/v1/auth/api-keys" },
  revokeApiKey: { method: "DELETE", path: "/v1/auth/api-keys/{id}" },
  rotateApiKey: { method: "POST", path: "/v1/auth/api-keys/{id}/rotate" },
  whoAmI: { method: "GET", path: "/v1/auth/whoami" },
  listAuditEvents: { method: "GET", path: "/v1/audit/events" },
  getAuditHead: { method: "GET", path: "/v1/audit/head" },
  listTenants: { method: "GET", path: "/v1/tenants" },
  createTenant: { method: "POST", path: "/v1/tenants" },
  getTenant: { method: "GET", path: "/v1/tenants/{key}" },
  healthz: { method: "GET", path: "/healthz" },
  readyz: { method: "GET", path: "/readyz" },
  metrics: { method: "GET", path: "/metrics" },
  openapi: { method: "GET", path: "/openapi.json" },
} as const satisfies { [K in keyof operations]: ContractRoute };

/** The operationId of an operation the SDK wraps. */
export type OperationId = keyof typeof OPERATIONS;

/** @internal `path` with each `{name}` replaced by its parameter, URL-encoded. */
export function expandPath(path: string, params: Record<string, string> = {}): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const v = params[name];
    if (v === undefined) throw new TypeError(`${path}: the path parameter ${name} is missing`);
    return encodeURIComponent(v);
  });
}
