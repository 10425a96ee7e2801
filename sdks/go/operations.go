package eai

import (
	"fmt"
	"net/http"
	"strings"
)

// Operation is one operation of contracts/v1/openapi.json as the SDK wraps it: its operationId, HTTP method
// and path template, and the Go method that calls it (Service is the Client's field, "" for a method of the
// Client itself). The SDK's methods take their method and path from this table (and nowhere else); the
// test suite checks it against the contract both ways.
type Operation struct {
	ID       string
	Method   string
	Path     string
	Service  string
	GoMethod string
}

// operations is the one table of the operations the SDK wraps.
var operations = []Operation{
	{"ingestGpuSamples", http.MethodPost, "/v1/finops/gpu/samples", "FinOps", "GpuSamples"},
	{"getGpuAllocation", http.MethodGet, "/v1/finops/gpu/allocation", "FinOps", "GpuAllocation"},
	{"getGpuAllocationFocus", http.MethodGet, "/v1/finops/gpu/allocation/focus", "FinOps", "GpuAllocationFocus"},
	{"explainGpuAllocation", http.MethodGet, "/v1/finops/gpu/allocation/explain", "FinOps", "GpuAllocationExplain"},
	{"getGpuUsageBreakdown", http.MethodGet, "/v1/finops/gpu/usage", "FinOps", "GpuUsage"},
	{"getGpuAllocationSeries", http.MethodGet, "/v1/finops/gpu/allocation/series", "FinOps", "GpuAllocationSeries"},
	{"getGpuTokenCosts", http.MethodGet, "/v1/finops/gpu/token-costs", "FinOps", "GpuTokenCosts"},
	{"reconcileSlurmJobs", http.MethodPost, "/v1/finops/gpu/slurm/reconciliation", "FinOps", "GpuSlurmReconciliation"},
	{"getGpuRecommendations", http.MethodGet, "/v1/finops/gpu/recommendations", "FinOps", "GpuRecommendations"},
	{"getGpuForecast", http.MethodGet, "/v1/finops/gpu/forecast", "FinOps", "GpuForecast"},
	{"listGpuAnomalies", http.MethodGet, "/v1/finops/gpu/anomalies", "FinOps", "GpuAnomalies"},
	{"listGpuStatements", http.MethodGet, "/v1/finops/gpu/statements", "FinOps", "GpuStatements"},
	{"issueGpuStatements", http.MethodPost, "/v1/finops/gpu/statements", "FinOps", "IssueGpuStatements"},
	{"getGpuStatement", http.MethodGet, "/v1/finops/gpu/statements/{number}", "FinOps", "GpuStatement"},
	{"createAllocationPolicy", http.MethodPost, "/v1/finops/allocation-policies", "FinOps", "CreateAllocationPolicy"},
	{"listAllocationPolicies", http.MethodGet, "/v1/finops/allocation-policies", "FinOps", "ListAllocationPolicies"},
	{"getAllocationPolicy", http.MethodGet, "/v1/finops/allocation-policies/{id}", "FinOps", "GetAllocationPolicy"},
	{"supersedeAllocationPolicy", http.MethodPost, "/v1/finops/allocation-policies/{id}/supersede", "FinOps", "SupersedeAllocationPolicy"},
	{"disableAllocationPolicy", http.MethodPost, "/v1/finops/allocation-policies/{id}/disable", "FinOps", "DisableAllocationPolicy"},
	{"listBudgets", http.MethodGet, "/v1/finops/budgets", "FinOps", "ListBudgets"},
	{"createBudget", http.MethodPost, "/v1/finops/budgets", "FinOps", "CreateBudget"},
	{"getBudget", http.MethodGet, "/v1/finops/budgets/{id}", "FinOps", "GetBudget"},
	{"supersedeBudget", http.MethodPost, "/v1/finops/budgets/{id}/supersede", "FinOps", "SupersedeBudget"},
	{"disableBudget", http.MethodPost, "/v1/finops/budgets/{id}/disable", "FinOps", "DisableBudget"},
	{"createReservation", http.MethodPost, "/v1/finops/reservations", "FinOps", "Reserve"},
	{"getReservation", http.MethodGet, "/v1/finops/reservations/{id}", "FinOps", "GetReservation"},
	{"commitReservation", http.MethodPost, "/v1/finops/reservations/{id}/commit", "FinOps", "CommitReservation"},
	{"releaseReservation", http.MethodPost, "/v1/finops/reservations/{id}/release", "FinOps", "ReleaseReservation"},
	{"getProvidersCatalog", http.MethodGet, "/v1/providers/catalog", "Providers", "Catalog"},
	{"registerProvider", http.MethodPost, "/v1/providers", "Providers", "Register"},
	{"ingestUsageEvents", http.MethodPost, "/v1/usage/events", "Usage", "Events"},
	{"listTenants", http.MethodGet, "/v1/tenants", "Tenants", "List"},
	{"createTenant", http.MethodPost, "/v1/tenants", "Tenants", "Create"},
	{"getTenant", http.MethodGet, "/v1/tenants/{key}", "Tenants", "Get"},
	{"whoAmI", http.MethodGet, "/v1/auth/whoami", "Auth", "WhoAmI"},
	{"createApiKey", http.MethodPost, "/v1/auth/api-keys", "Auth", "CreateAPIKey"},
	{"listApiKeys", http.MethodGet, "/v1/auth/api-keys", "Auth", "ListAPIKeys"},
	{"revokeApiKey", http.MethodDelete, "/v1/auth/api-keys/{id}", "Auth", "RevokeAPIKey"},
	{"rotateApiKey", http.MethodPost, "/v1/auth/api-keys/{id}/rotate", "Auth", "RotateAPIKey"},
	{"listAuditEvents", http.MethodGet, "/v1/audit/events", "Audit", "Events"},
	{"getAuditHead", http.MethodGet, "/v1/audit/head", "Audit", "Head"},
	{"healthz", http.MethodGet, "/healthz", "", "Healthz"},
	{"readyz", http.MethodGet, "/readyz", "", "Readyz"},
	{"metrics", http.MethodGet, "/metrics", "", "Metrics"},
	{"openapi", http.MethodGet, "/openapi.json", "", "OpenAPI"},
}

var operationsByID = func() map[string]Operation {
	m := make(map[string]Operation, len(operations))
	for _, op := range operations {
		m[op.ID] = op
	}
	return m
}()

// Operations returns the operations the SDK wraps (a copy), in the order of the table.
func Operations() []Operation {
	return append([]Operation(nil), operations...)
}

// operation returns the operation of an operationId; an id not in the table is a bug of the SDK.
func operation(id string) Operation {
	op, ok := operationsByID[id]
	if !ok {
		panic("eai: no operation " + id + " in the SDK's table")
	}
	return op
}

// path fills the operation's path template with params, in order, each escaped as one path segment.
func (op Operation) path(params ...string) string {
	p := op.Path
	for _, v := range params {
		i := strings.IndexByte(p, '{')
		j := strings.IndexByte(p, '}')
		if i < 0 || j < i {
			panic(fmt.Sprintf("eai: %s: more parameters than %s has", op.ID, op.Path))
		}
		p = p[:i] + pathID(v) + p[j+1:]
	}
	if strings.IndexByte(p, '{') >= 0 {
		panic(fmt.Sprintf("eai: %s: a parameter of %s is missing", op.ID, op.Path))
	}
	return p
}
