package ai.enterprise.eai;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Every operation of API v1 this SDK wraps: its {@code operationId}, method and path template, as in
 * {@code contracts/v1/openapi.json}. The SDK builds every request from this registry (nothing else names a path),
 * and its test suite checks it against the contract both ways.
 */
public enum ApiOperation {
    /** {@code POST /v1/finops/gpu/samples}. */
    INGEST_GPU_SAMPLES("ingestGpuSamples", "POST", "/v1/finops/gpu/samples"),
    /** {@code GET /v1/finops/gpu/allocation}. */
    GET_GPU_ALLOCATION("getGpuAllocation", "GET", "/v1/finops/gpu/allocation"),
    /** {@code GET /v1/finops/gpu/allocation/focus}. */
    GET_GPU_ALLOCATION_FOCUS("getGpuAllocationFocus", "GET", "/v1/finops/gpu/allocation/focus"),
    /** {@code GET /v1/finops/gpu/allocation/explain}. */
    EXPLAIN_GPU_ALLOCATION("explainGpuAllocation", "GET", "/v1/finops/gpu/allocation/explain"),
    /** {@code GET /v1/finops/gpu/usage}. */
    GET_GPU_USAGE_BREAKDOWN("getGpuUsageBreakdown", "GET", "/v1/finops/gpu/usage"),
    /** {@code GET /v1/finops/gpu/allocation/series}. */
    GET_GPU_ALLOCATION_SERIES("getGpuAllocationSeries", "GET", "/v1/finops/gpu/allocation/series"),
    /** {@code GET /v1/finops/gpu/token-costs}. */
    GET_GPU_TOKEN_COSTS("getGpuTokenCosts", "GET", "/v1/finops/gpu/token-costs"),
    /** {@code POST /v1/finops/gpu/slurm/reconciliation}. */
    RECONCILE_SLURM_JOBS("reconcileSlurmJobs", "POST", "/v1/finops/gpu/slurm/reconciliation"),
    /** {@code GET /v1/finops/gpu/recommendations}. */
    GET_GPU_RECOMMENDATIONS("getGpuRecommendations", "GET", "/v1/finops/gpu/recommendations"),
    /** {@code GET /v1/finops/gpu/forecast}. */
    GET_GPU_FORECAST("getGpuForecast", "GET", "/v1/finops/gpu/forecast"),
    /** {@code GET /v1/finops/gpu/anomalies}. */
    LIST_GPU_ANOMALIES("listGpuAnomalies", "GET", "/v1/finops/gpu/anomalies"),
    /** {@code GET /v1/finops/gpu/statements}. */
    LIST_GPU_STATEMENTS("listGpuStatements", "GET", "/v1/finops/gpu/statements"),
    /** {@code POST /v1/finops/gpu/statements}. */
    ISSUE_GPU_STATEMENTS("issueGpuStatements", "POST", "/v1/finops/gpu/statements"),
    /** {@code GET /v1/finops/gpu/statements/{number}}. */
    GET_GPU_STATEMENT("getGpuStatement", "GET", "/v1/finops/gpu/statements/{number}"),
    /** {@code POST /v1/finops/allocation-policies}. */
    CREATE_ALLOCATION_POLICY("createAllocationPolicy", "POST", "/v1/finops/allocation-policies"),
    /** {@code GET /v1/finops/allocation-policies}. */
    LIST_ALLOCATION_POLICIES("listAllocationPolicies", "GET", "/v1/finops/allocation-policies"),
    /** {@code GET /v1/finops/allocation-policies/{id}}. */
    GET_ALLOCATION_POLICY("getAllocationPolicy", "GET", "/v1/finops/allocation-policies/{id}"),
    /** {@code POST /v1/finops/allocation-policies/{id}/supersede}. */
    SUPERSEDE_ALLOCATION_POLICY("supersedeAllocationPolicy", "POST", "/v1/finops/allocation-policies/{id}/supersede"),
    /** {@code POST /v1/finops/allocation-policies/{id}/disable}. */
    DISABLE_ALLOCATION_POLICY("disableAllocationPolicy", "POST", "/v1/finops/allocation-policies/{id}/disable"),
    /** {@code GET /v1/finops/budgets}. */
    LIST_BUDGETS("listBudgets", "GET", "/v1/finops/budgets"),
    /** {@code POST /v1/finops/budgets}. */
    CREATE_BUDGET("createBudget", "POST", "/v1/finops/budgets"),
    /** {@code GET /v1/finops/budgets/{id}}. */
    GET_BUDGET("getBudget", "GET", "/v1/finops/budgets/{id}"),
    /** {@code POST /v1/finops/budgets/{id}/supersede}. */
    SUPERSEDE_BUDGET("supersedeBudget", "POST", "/v1/finops/budgets/{id}/supersede"),
    /** {@code POST /v1/finops/budgets/{id}/disable}. */
    DISABLE_BUDGET("disableBudget", "POST", "/v1/finops/budgets/{id}/disable"),
    /** {@code POST /v1/finops/reservations}. */
    CREATE_RESERVATION("createReservation", "POST", "/v1/finops/reservations"),
    /** {@code GET /v1/finops/reservations/{id}}. */
    GET_RESERVATION("getReservation", "GET", "/v1/finops/reservations/{id}"),
    /** {@code POST /v1/finops/reservations/{id}/commit}. */
    COMMIT_RESERVATION("commitReservation", "POST", "/v1/finops/reservations/{id}/commit"),
    /** {@code POST /v1/finops/reservations/{id}/release}. */
    RELEASE_RESERVATION("releaseReservation", "POST", "/v1/finops/reservations/{id}/release"),
    /** {@code GET /v1/providers/catalog}. */
    GET_PROVIDERS_CATALOG("getProvidersCatalog", "GET", "/v1/providers/catalog"),
    /** {@code POST /v1/providers}. */
    REGISTER_PROVIDER("registerProvider", "POST", "/v1/providers"),
    /** {@code POST /v1/usage/events}. */
    INGEST_USAGE_EVENTS("ingestUsageEvents", "POST", "/v1/usage/events"),
    /** {@code GET /v1/tenants}. */
    LIST_TENANTS("listTenants", "GET", "/v1/tenants"),
    /** {@code POST /v1/tenants}. */
    CREATE_TENANT("createTenant", "POST", "/v1/tenants"),
    /** {@code GET /v1/tenants/{key}}. */
    GET_TENANT("getTenant", "GET", "/v1/tenants/{key}"),
    /** {@code GET /v1/auth/whoami}. */
    WHO_AM_I("whoAmI", "GET", "/v1/auth/whoami"),
    /** {@code POST /v1/auth/api-keys}. */
    CREATE_API_KEY("createApiKey", "POST", "/v1/auth/api-keys"),
    /** {@code GET /v1/auth/api-keys}. */
    LIST_API_KEYS("listApiKeys", "GET", "/v1/auth/api-keys"),
    /** {@code DELETE /v1/auth/api-keys/{id}}. */
    REVOKE_API_KEY("revokeApiKey", "DELETE", "/v1/auth/api-keys/{id}"),
    /** {@code POST /v1/auth/api-keys/{id}/rotate}. */
    ROTATE_API_KEY("rotateApiKey", "POST", "/v1/auth/api-keys/{id}/rotate"),
    /** {@code GET /v1/audit/events}. */
    LIST_AUDIT_EVENTS("listAuditEvents", "GET", "/v1/audit/events"),
    /** {@code GET /v1/audit/head}. */
    GET_AUDIT_HEAD("getAuditHead", "GET", "/v1/audit/head"),
    /** {@code GET /healthz}. */
    HEALTHZ("healthz", "GET", "/healthz"),
    /** {@code GET /readyz}. */
    READYZ("readyz", "GET", "/readyz"),
    /** {@code GET /metrics}. */
    METRICS("metrics", "GET", "/metrics"),
    /** {@code GET /openapi.json}. */
    OPENAPI("openapi", "GET", "/openapi.json");

    private final String operationId;
    private final String method;
    private final String pathTemplate;

    ApiOperation(String operationId, String method, String pathTemplate) {
        this.operationId = operationId;
        this.method = method;
        this.pathTemplate = pathTemplate;
    }

    /**
     * The contract's {@code operationId}.
     *
     * @return e.g. {@code listTenants}
     */
    public String operationId() {
        return operationId;
    }

    /**
     * The HTTP method.
     *
     * @return {@code GET}, {@code POST} or {@code DELETE}
     */
    public String method() {
        return method;
    }

    /**
     * The path template of the contract.
     *
     * @return e.g. {@code /v1/tenants/{key}}
     */
    public String pathTemplate() {
        return pathTemplate;
    }

    /**
     * The path with its parameters filled in, in order, each percent-encoded.
     *
     * @param args one value per {@code {param}} of the template
     * @return the path
     * @throws IllegalArgumentException when the count differs or a value is empty
     */
    public String path(String... args) {
        StringBuilder out = new StringBuilder();
        int i = 0;
        int pos = 0;
        while (true) {
            int open = pathTemplate.indexOf('{', pos);
            if (open < 0) {
                out.append(pathTemplate, pos, pathTemplate.length());
                break;
            }
            int close = pathTemplate.indexOf('}', open);
            if (i >= args.length) {
                throw new IllegalArgumentException(operationId + " needs " + pathTemplate.substring(open, close + 1));
            }
            out.append(pathTemplate, pos, open).append(segment(args[i++]));
            pos = close + 1;
        }
        if (i != args.length) {
            throw new IllegalArgumentException(operationId + " takes " + i + " path parameter(s), not " + args.length);
        }
        return out.toString();
    }

    /** A path segment, percent-encoded. */
    static String segment(String value) {
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("an id must be a non-empty string");
        }
        return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /**
     * Whether a call carries an {@code Idempotency-Key} (every POST and DELETE).
     *
     * @param method an HTTP method
     * @return true for every method but GET and HEAD
     */
    static boolean carriesKey(String method) {
        String m = method.toUpperCase(Locale.ROOT);
        return !m.equals("GET") && !m.equals("HEAD");
    }
}
