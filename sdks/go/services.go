package eai

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"time"
)

// pathID escapes an id as one path segment.
func pathID(id string) string { return url.PathEscape(id) }

// op calls an operation of the table (operations.go) with its path parameters in order; body nil sends no
// body for a GET or DELETE and `{}` otherwise.
func (c *Client) op(ctx context.Context, id string, params []string, body, out any, opts []RequestOption) error {
	cl, err := c.newCall(opts)
	if err != nil {
		return err
	}
	var raw []byte
	if body != nil {
		if raw, err = encodeBody(body); err != nil {
			return err
		}
	} else if m := operation(id).Method; m != http.MethodGet && m != http.MethodDelete {
		raw = []byte("{}")
	}
	return c.invoke(ctx, cl, id, params, raw, out)
}

// invoke sends one call of an operation of the table.
func (c *Client) invoke(ctx context.Context, cl *call, id string, params []string, body []byte, out any) error {
	o := operation(id)
	return c.send(ctx, cl, o.Method, o.path(params...), body, out)
}

// ---------------------------------------------------------------------------------------------- FinOps

// FinOpsService groups the FinOps endpoints: GPU samples, the cost allocation, allocation policies, budgets
// and reservations.
type FinOpsService struct{ c *Client }

// GpuSamples stores GPU samples (POST /v1/finops/gpu/samples; platform_admin or sampler keys). body is a
// GpuSamplesRequest (or pointer), a map such as map[string]any{"samples": samples}, or a bare list of
// samples ([]GpuSample, []map[string]any, …).
//
// Samples without a timestamp are stamped with the current instant once, before the first attempt (the
// caller's values are not modified), so a retry is counted once: ingest is idempotent on (gpu_uuid,
// timestamp). The list is sent in batches of WithMaxBatchSize; a batch refused with 413 is halved and sent
// again (WithSplitOnPayloadTooLarge). The result sums the answers. On an error, the result (never nil) holds
// what earlier batches stored, and an *APIError's detail indexes are positions in the caller's list.
func (f *FinOpsService) GpuSamples(ctx context.Context, body any, opts ...RequestOption) (*IngestResult, error) {
	cl, err := f.c.newCall(opts)
	if err != nil {
		return &IngestResult{}, err
	}
	b, err := splitBody(body, "samples")
	if err != nil {
		return &IngestResult{}, err
	}
	if b.whole == nil {
		if b.records, err = stampSamples(b.records, time.Now()); err != nil {
			return &IngestResult{}, err
		}
	}
	return f.c.ingest(ctx, cl, "ingestGpuSamples", b)
}

// GpuAllocation returns the GPU cost allocation of a period (GET /v1/finops/gpu/allocation). Give the
// period with WithQuery(map[string]string{"from": "2026-10-01", "to": "2026-10-31"}) (a date `to` includes
// its whole day; default: the last 30 days). A tenant-scoped caller (or a platform key WithTenant) sees
// only its own items, tenant row and share of each deployment.
func (f *FinOpsService) GpuAllocation(ctx context.Context, opts ...RequestOption) (*Allocation, error) {
	var out Allocation
	if err := f.c.op(ctx, "getGpuAllocation", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// focusAccept is what a FOCUS export may answer: the file (CSV or Parquet), or an error in the JSON envelope.
const focusAccept = "text/csv, application/vnd.apache.parquet, application/json"

// GpuAllocationFocus returns the allocation of a period as a FOCUS file, its bytes (GET
// /v1/finops/gpu/allocation/focus). Give the period as for GpuAllocation, and optionally the format
// (FocusFormatCSV, the default: RFC 4180 with a header line, or FocusFormatParquet), the FOCUS version of the
// columns (WithFocusVersion: FocusVersion13, the server's default, or FocusVersion12) and the rows
// (WithFocusGranularity: FocusGranularityDay, the default, or FocusGranularityHour):
//
//	csv, err := client.FinOps.GpuAllocationFocus(ctx, eai.WithQuery(map[string]string{
//		"from": "2026-10-01", "to": "2026-10-31", "format": eai.FocusFormatCSV}),
//		eai.WithFocusVersion(eai.FocusVersion12), eai.WithFocusGranularity(eai.FocusGranularityHour))
//
// One row per tenant × deployment × policy × UTC day (or hour); BilledCost sums exactly to the allocation's
// allocated for the same period (a platform caller also gets the x_Unallocated rows, and then the cost). 1.3
// adds the split-cost columns (AllocatedMethodId, …) and InvoiceId, the statement a row belongs to once
// issued. Another format, version or granularity, or a bad period, is an *APIError with Code
// "validation_error" whose Details name the field. A tenant-scoped caller gets its own rows only.
func (f *FinOpsService) GpuAllocationFocus(ctx context.Context, opts ...RequestOption) ([]byte, error) {
	cl, err := f.c.newCall(opts)
	if err != nil {
		return nil, err
	}
	cl.accept = focusAccept
	var out json.RawMessage
	if err := f.c.invoke(ctx, cl, "getGpuAllocationFocus", nil, nil, &out); err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// GpuAllocationFocusToFile writes GpuAllocationFocus's file to path (created or truncated, mode 0644); on an
// error nothing is written.
//
//	err := client.FinOps.GpuAllocationFocusToFile(ctx, "october.parquet", eai.WithQuery(map[string]string{
//		"from": "2026-10-01", "to": "2026-10-31", "format": eai.FocusFormatParquet}))
func (f *FinOpsService) GpuAllocationFocusToFile(ctx context.Context, path string, opts ...RequestOption) error {
	data, err := f.GpuAllocationFocus(ctx, opts...)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// GpuAllocationExplain returns why a deployment costs what it does over a period, bucket by bucket (GET
// /v1/finops/gpu/allocation/explain): per bucket the measured and estimated GPU-seconds, each tenant's claim
// and share, the policy's rates, the exact cost and its split; then the idle spread and the one rounding with
// its largest-remainder step. Give the period as for GpuAllocation, and "tenant_id" to see it as that tenant
// does (a platform key: any tenant; a tenant's key: its own only, else ErrForbidden):
//
//	e, err := client.FinOps.GpuAllocationExplain(ctx, "vllm-llama-70b", eai.WithQuery(map[string]string{
//		"from": "2026-10-01", "to": "2026-10-31"}))
//
// Its Pods say where the deployment's time ran: its breakdown by namespace, pod, GPU and share method, each
// pod's share of its GPU (GpuShare, platform keys) and how it was obtained.
//
// A tenant's key sees a deployment only when charged on it, every other tenant summed into one
// PartyOtherTenants party; otherwise ErrNotFound.
func (f *FinOpsService) GpuAllocationExplain(ctx context.Context, deploymentID string, opts ...RequestOption) (*AllocationExplanation, error) {
	var out AllocationExplanation
	opts = append([]RequestOption{WithQueryParam("deployment_id", deploymentID)}, opts...)
	if err := f.c.op(ctx, "explainGpuAllocation", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GpuUsage returns a period's GPU time and cost broken down by pod, node, GPU, namespace, deployment, tenant,
// model or share method (GET /v1/finops/gpu/usage). Give the period as for GpuAllocation, the dimensions of a
// row with WithGroupBy (default DimensionDeployment) and the rows to keep with WithFilter (values of one
// dimension: any of them; several dimensions: all of them):
//
//	u, err := client.FinOps.GpuUsage(ctx,
//		eai.WithQuery(map[string]string{"from": "2026-10-01", "to": "2026-10-31"}),
//		eai.WithGroupBy(eai.DimensionNamespace, eai.DimensionPod),
//		eai.WithFilter(eai.DimensionDeployment, "vllm-llama-70b"))
//
// Each deployment's cost (the allocation's for the same period) is apportioned over its rows by GPU-seconds
// to the cent, so a deployment's rows sum exactly to its cost, and a filter keeps the same cents. Grouped by
// DimensionGpu (the device: a GPU shared by several pods is one value), each row has its share of the GPU's
// time (GpuUsageRow.GpuShare, platform keys); DimensionShare says how that share was obtained. A tenant's
// key sees the rows of its dedicated deployments only. A bad dimension or filter is an *APIError matching
// ErrValidation whose Fields() name group_by or filter.
func (f *FinOpsService) GpuUsage(ctx context.Context, opts ...RequestOption) (*GpuUsageBreakdown, error) {
	var out GpuUsageBreakdown
	if err := f.c.op(ctx, "getGpuUsageBreakdown", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GpuTokenCosts returns the cost per million tokens of a period, blended, input and output (GET
// /v1/finops/gpu/token-costs). Give the period as for GpuAllocation, and optionally the basis
// (TokenCostBasisAllocation, the default, or TokenCostBasisUsage) and the rows (TokenCostAggregateDeployment,
// the default, TokenCostAggregateTenant or TokenCostAggregateModel):
//
//	costs, err := client.FinOps.GpuTokenCosts(ctx, eai.WithQuery(map[string]string{
//		"from": "2026-10-01", "to": "2026-10-31", "aggregate": eai.TokenCostAggregateTenant}))
//
// The input/output split uses vLLM's measured prefill and decode time where a sampler posts its counters,
// else the policy's output_token_weight (TokenCost.AllocationMethod says which). A tenant-scoped caller sees
// only its share, on every aggregate.
func (f *FinOpsService) GpuTokenCosts(ctx context.Context, opts ...RequestOption) (*TokenCostList, error) {
	var out TokenCostList
	if err := f.c.op(ctx, "getGpuTokenCosts", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GpuAllocationSeries returns the cost over time of a period (GET /v1/finops/gpu/allocation/series): the
// period, given as for GpuAllocation, cut into steps of "step" (SeriesStepHour, SeriesStepDay, the default,
// SeriesStepWeek or SeriesStepMonth; UTC; at most 1000 steps):
//
//	series, err := client.FinOps.GpuAllocationSeries(ctx, eai.WithQuery(map[string]string{
//		"from": "2026-10-01", "to": "2026-10-31", "step": eai.SeriesStepDay}))
//
// Each step's cost, allocated and unallocated are the period's apportioned, so every column of the steps
// sums to the period's totals (and to GpuAllocation's) to the cent.
func (f *FinOpsService) GpuAllocationSeries(ctx context.Context, opts ...RequestOption) (*AllocationSeries, error) {
	var out AllocationSeries
	if err := f.c.op(ctx, "getGpuAllocationSeries", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GpuSlurmReconciliation returns Slurm's accounting of its GPU jobs over a period beside what was measured of
// them (POST /v1/finops/gpu/slurm/reconciliation). sacct is the output of `sacct --json -a -X -S <from> -E
// <to>`: its bytes as they came (json.RawMessage, []byte or string: sent as they are) or a value that marshals
// to it (a map[string]any from json.Unmarshal, a struct); only its `jobs` are read. Give the period as for
// GpuAllocation, and the idle threshold with WithIdleBelow (default "0.1"):
//
//	out, err := exec.Command("sacct", "--json", "-a", "-X", "-S", "2026-10-01", "-E", "2026-10-31").Output()
//	r, err := client.FinOps.GpuSlurmReconciliation(ctx, out,
//		eai.WithQuery(map[string]string{"from": "2026-10-01", "to": "2026-10-31"}), eai.WithIdleBelow("0.1"))
//
// Per job with GPUs in the period: the GPU-seconds Slurm allocated, those the samplers measured (pod
// `job-<id>`, namespace its account), how busy, its cost and a Status: SlurmJobOK, SlurmJobIdle (busy under
// the idle threshold of the allocated time), SlurmJobNotMeasured (allocated, nothing measured) or
// SlurmJobNotInSlurm (measured, not in the document); IdleCost is the cost of the idle jobs. A tenant's key
// sees the jobs of its dedicated deployments only. A document without `jobs`, a threshold out of 0..1 or a bad
// period is an *APIError matching ErrValidation whose Fields() name body, idle_below, from or to. Nothing is
// stored, so the call is retried like a read.
func (f *FinOpsService) GpuSlurmReconciliation(ctx context.Context, sacct any, opts ...RequestOption) (*SlurmReconciliation, error) {
	var raw []byte
	switch b := sacct.(type) {
	case nil:
		return nil, configError("GpuSlurmReconciliation: no sacct document")
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = encodeBody(b); err != nil {
			return nil, err
		}
	}
	cl, err := f.c.newCall(opts)
	if err != nil {
		return nil, err
	}
	var out SlurmReconciliation
	if err := f.c.invoke(ctx, cl, "reconcileSlurmJobs", nil, raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GpuRecommendations returns what to do about a period's idle and oversized GPUs, with the savings (GET
// /v1/finops/gpu/recommendations), largest monthly savings first. Give the period as for GpuAllocation, and
// the thresholds with WithIdleUtilization, WithIdleShare and WithLowUtilization (decimals from 0 to 1; left
// out, the server's: 0.05, 0.5 and 0.3; Thresholds in the answer gives those applied):
//
//	recs, err := client.FinOps.GpuRecommendations(ctx,
//		eai.WithQuery(map[string]string{"from": "2026-10-01", "to": "2026-10-31"}), eai.WithIdleUtilization("0.05"))
//
// Per deployment a Kind: RecommendationIdleGpus (GPUs busy at most the idle utilization for at least the idle
// share of the hours they ran: ActionRemoveGpus), RecommendationLowUtilization (the others, busy under the low
// utilization: ActionFewerGpus, ActionMigProfile or ActionShareGpu) or RecommendationUnpriced (GPU time no
// policy prices: ActionAddPolicy, no savings). Evidence holds the figures it rests on (Quantity, exact); Cost,
// Savings (the period's) and MonthlySavings are Money, nil where unpriced. A tenant's key sees its dedicated
// deployments only. A threshold out of range or a bad period is an *APIError matching ErrValidation whose
// Fields() name it.
func (f *FinOpsService) GpuRecommendations(ctx context.Context, opts ...RequestOption) (*RecommendationList, error) {
	var out RecommendationList
	if err := f.c.op(ctx, "getGpuRecommendations", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GpuForecast returns a month's expected spend per tenant and deployment, and when the budgets run out (GET
// /v1/finops/gpu/forecast). Give the month with WithMonth (or "period": "YYYY-MM" in WithQuery); none, the
// current month (UTC):
//
//	f, err := client.FinOps.GpuForecast(ctx, eai.WithMonth(2026, time.November))
//
// Spend is counted up to AsOf (a midnight UTC); the DaysLeft are a straight line fitted to the daily costs
// since HistoryFrom (28 days before the month), times a factor per weekday. Each line (tenant x deployment x
// currency) and each tenant's total has Spent, Expected and the band Low/High; each budget in force the day
// its limit is expected to be reached (ExhaustedOn, "YYYY-MM-DD", nil: not this month) and the earliest
// (ExhaustedOnHigh). A month over has its figures, the band equal to them. A tenant's key sees its own lines
// and budgets. Another period is an *APIError matching ErrValidation whose Fields() name period.
func (f *FinOpsService) GpuForecast(ctx context.Context, opts ...RequestOption) (*Forecast, error) {
	var out Forecast
	if err := f.c.op(ctx, "getGpuForecast", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GpuAnomalies returns a period's hours whose cost or GPU time was far from their deployment's baseline (GET
// /v1/finops/gpu/anomalies), newest first. Give the period as for GpuAllocation:
//
//	list, err := client.FinOps.GpuAnomalies(ctx, eai.WithQuery(map[string]string{"from": "2026-11-01", "to": "2026-11-07"}))
//
// Each: the deployment and Hour, the Metric (AnomalyMetricCost in Currency, or AnomalyMetricGpuSeconds), the
// hour's Value, the baseline's median and MAD, DeviationMads (scaled MADs away; empty when the MAD is 0) and
// the Direction (AnomalyAbove or AnomalyBelow). The server checks each closed hour once it is settled. A
// tenant's key sees its dedicated deployments' only.
func (f *FinOpsService) GpuAnomalies(ctx context.Context, opts ...RequestOption) (*AnomalyList, error) {
	var out AnomalyList
	if err := f.c.op(ctx, "listGpuAnomalies", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GpuStatements lists the issued statements, without their lines (GET /v1/finops/gpu/statements), newest
// period first, then by number. Filter with WithMonth (only that month) and "tenant_id" in WithQuery (only
// that tenant's; platform callers):
//
//	list, err := client.FinOps.GpuStatements(ctx, eai.WithMonth(2026, time.October))
//
// A tenant's key sees its own only. A bad period is an *APIError matching ErrValidation whose Fields() name
// period.
func (f *FinOpsService) GpuStatements(ctx context.Context, opts ...RequestOption) (*StatementList, error) {
	var out StatementList
	if err := f.c.op(ctx, "listGpuStatements", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// IssueGpuStatements issues the statements of a month that is over (POST /v1/finops/gpu/statements;
// platform_admin). body is a StatementIssue or a map such as map[string]any{"period": "2026-10"}:
//
//	out, err := client.FinOps.IssueGpuStatements(ctx, eai.StatementIssue{Period: "2026-10"})
//
// Each tenant with cost in the month gets a numbered statement (ST-YYYY-MM-NNNN) of its allocated cost, to the
// cent; with no TenantID the platform also gets the statement of unallocated capacity (UnallocatedTenantID). A
// statement is issued once and never changes: one issued before comes back in AlreadyIssued. Retried with the
// same Idempotency-Key (WithIdempotencyKey, else a fresh one). A month not over is an *APIError matching
// ErrValidation whose Fields() name period.
func (f *FinOpsService) IssueGpuStatements(ctx context.Context, body any, opts ...RequestOption) (*StatementIssued, error) {
	var out StatementIssued
	if err := f.c.op(ctx, "issueGpuStatements", nil, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GpuStatement returns one issued statement (GET /v1/finops/gpu/statements/{number}): its Lines and Totals as
// issued, the Adjustments data that arrived since made to it (computed at AsOf) and AdjustedTotals (Totals +
// Adjustments). Money is Money and quantities Decimal: exact.
//
//	st, err := client.FinOps.GpuStatement(ctx, "ST-2026-10-0001")
//
// A tenant's key reads its own only: another's is an *APIError matching ErrNotFound.
func (f *FinOpsService) GpuStatement(ctx context.Context, number string, opts ...RequestOption) (*Statement, error) {
	var out Statement
	if err := f.c.op(ctx, "getGpuStatement", []string{number}, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// statementCSVAccept is what a statement's CSV may answer: the file, or an error in the JSON envelope.
const statementCSVAccept = "text/csv, application/json"

// GpuStatementCSV returns GpuStatement as CSV, its bytes (format=csv): a header
// kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency, the charge lines, a total line per
// currency, the adjustment lines and an adjusted_total line per currency.
func (f *FinOpsService) GpuStatementCSV(ctx context.Context, number string, opts ...RequestOption) ([]byte, error) {
	cl, err := f.c.newCall(append(append([]RequestOption(nil), opts...), WithQueryParam("format", "csv")))
	if err != nil {
		return nil, err
	}
	cl.accept = statementCSVAccept
	var out json.RawMessage
	if err := f.c.invoke(ctx, cl, "getGpuStatement", []string{number}, nil, &out); err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// CreateAllocationPolicy creates an allocation policy (POST /v1/finops/allocation-policies;
// platform_admin). body is an AllocationPolicyCreate or a map such as
// map[string]any{"name": "local-gpu-default", "gpu_hourly_cost": "2.50"}. Not retried after an error where
// the server may have acted (see Idempotent).
func (f *FinOpsService) CreateAllocationPolicy(ctx context.Context, body any, opts ...RequestOption) (*AllocationPolicyCreated, error) {
	var out AllocationPolicyCreated
	if err := f.c.op(ctx, "createAllocationPolicy", nil, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListAllocationPolicies lists every allocation policy, closed ones included, oldest first
// (GET /v1/finops/allocation-policies).
func (f *FinOpsService) ListAllocationPolicies(ctx context.Context, opts ...RequestOption) (*AllocationPolicyList, error) {
	var out AllocationPolicyList
	if err := f.c.op(ctx, "listAllocationPolicies", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// SupersedeAllocationPolicy closes a policy and opens its replacement (POST
// /v1/finops/allocation-policies/{id}/supersede; platform_admin). body is an AllocationPolicySupersede, a
// map, or nil (a copy from now).
func (f *FinOpsService) SupersedeAllocationPolicy(ctx context.Context, id string, body any, opts ...RequestOption) (*AllocationPolicyChange, error) {
	var out AllocationPolicyChange
	if err := f.c.op(ctx, "supersedeAllocationPolicy", []string{id}, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// DisableAllocationPolicy closes a policy and opens a disabled copy (POST
// /v1/finops/allocation-policies/{id}/disable; platform_admin). body is an AllocationPolicyDisable, a map,
// or nil (from now).
func (f *FinOpsService) DisableAllocationPolicy(ctx context.Context, id string, body any, opts ...RequestOption) (*AllocationPolicyChange, error) {
	var out AllocationPolicyChange
	if err := f.c.op(ctx, "disableAllocationPolicy", []string{id}, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ------------------------------------------------------------------------------------------- Providers

// ProvidersService groups the providers endpoints.
type ProvidersService struct{ c *Client }

// Catalog returns the catalog of model providers (GET /v1/providers/catalog).
func (p *ProvidersService) Catalog(ctx context.Context, opts ...RequestOption) (*Catalog, error) {
	var out Catalog
	if err := p.c.op(ctx, "getProvidersCatalog", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// Register registers a deployment's OpenAI-compatible endpoint (POST /v1/providers; platform_admin); a
// new registration of a deployment replaces the previous one, so it is retried as idempotent. body is a
// ProviderCreate or a map. With Verify (the default) the server first calls GET {base_url}/models and
// refuses a URL that lists no model (an *APIError with ErrValidation naming `base_url`); Verify false
// registers it unconfirmed (DiscoveryConfig).
func (p *ProvidersService) Register(ctx context.Context, body any, opts ...RequestOption) (*Provider, error) {
	var out Provider
	if err := p.c.op(ctx, "registerProvider", nil, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ----------------------------------------------------------------------------------------------- Usage

// UsageService groups the usage endpoints. See package usage for a builder and a background emitter.
type UsageService struct{ c *Client }

// Events stores usage events (POST /v1/usage/events). events is a []UsageEvent, a UsageEventsRequest, a
// map such as map[string]any{"events": events}, or a list of maps.
//
// Events without event_id get a random uuid v4, without schema_version "1.0", without occurred_at the
// current instant: once, before the first attempt (the caller's values are not modified), so a retry
// replaces rather than doubles (events are upserted by tenant and event_id). Batching, 413 splitting and
// errors work as in FinOpsService.GpuSamples. The tenant comes from the key, from WithTenant for a platform
// key, or from each event's tenant_id.
//
// Events that name their tenant by slug (UsageEvent.TenantSlug, as usage.NewEvent("acme", …) builds them)
// are sent with that slug as X-EAI-Tenant, in place of the client's or the call's: all the events of one
// call must then name the same slug (an error matching ErrConfig otherwise, before anything is sent; the
// usage.Emitter groups its batches by tenant).
func (u *UsageService) Events(ctx context.Context, events any, opts ...RequestOption) (*IngestResult, error) {
	slug, err := eventsTenantSlug(events)
	if err != nil {
		return &IngestResult{}, err
	}
	if slug != "" {
		opts = append(opts[:len(opts):len(opts)], WithTenant(slug))
	}
	cl, err := u.c.newCall(opts)
	if err != nil {
		return &IngestResult{}, err
	}
	b, err := splitBody(events, "events")
	if err != nil {
		return &IngestResult{}, err
	}
	if b.whole == nil {
		if b.records, err = prepareEvents(b.records, time.Now()); err != nil {
			return &IngestResult{}, err
		}
	}
	return u.c.ingest(ctx, cl, "ingestUsageEvents", b)
}

// eventsTenantSlug returns the tenant slug the typed events name (UsageEvent.TenantSlug), "" when none
// does, and an error when they do not all name the same one (the tenant of a request is one header).
func eventsTenantSlug(events any) (string, error) {
	var list []UsageEvent
	switch v := events.(type) {
	case []UsageEvent:
		list = v
	case UsageEventsRequest:
		list = v.Events
	case *UsageEventsRequest:
		if v != nil {
			list = v.Events
		}
	case []*UsageEvent:
		list = make([]UsageEvent, 0, len(v))
		for _, e := range v {
			if e != nil {
				list = append(list, *e)
			}
		}
	default:
		return "", nil // maps and raw JSON carry tenant_id only
	}
	slug := ""
	for i, e := range list {
		if e.TenantSlug == "" {
			continue
		}
		if slug == "" {
			slug = e.TenantSlug
		} else if e.TenantSlug != slug {
			return "", configError("usage event %d names tenant %q by slug, an earlier one %q: send each tenant's events in a call of its own (usage.Emitter does)", i, e.TenantSlug, slug)
		}
	}
	if slug == "" {
		return "", nil
	}
	for i, e := range list {
		if e.TenantSlug == "" {
			return "", configError("usage event %d names no tenant slug while others name %q: send each tenant's events in a call of its own (usage.Emitter does)", i, slug)
		}
	}
	return slug, nil
}

// --------------------------------------------------------------------------------------------- Tenants

// TenantsService groups the tenants endpoints.
type TenantsService struct{ c *Client }

// Create registers a tenant (POST /v1/tenants; platform_admin). body is a TenantCreate or a map.
func (t *TenantsService) Create(ctx context.Context, body any, opts ...RequestOption) (*Tenant, error) {
	var out Tenant
	if err := t.c.op(ctx, "createTenant", nil, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// List returns the registered tenants, by slug (GET /v1/tenants).
func (t *TenantsService) List(ctx context.Context, opts ...RequestOption) (*TenantList, error) {
	var out TenantList
	if err := t.c.op(ctx, "listTenants", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// Get returns a tenant by slug or id (GET /v1/tenants/{key}).
func (t *TenantsService) Get(ctx context.Context, slugOrID string, opts ...RequestOption) (*Tenant, error) {
	var out Tenant
	if err := t.c.op(ctx, "getTenant", []string{slugOrID}, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ------------------------------------------------------------------------------------------------ Auth

// AuthService groups the identity and API key endpoints.
type AuthService struct{ c *Client }

// WhoAmI returns the identity behind the client's key (GET /v1/auth/whoami).
func (a *AuthService) WhoAmI(ctx context.Context, opts ...RequestOption) (*WhoAmI, error) {
	var out WhoAmI
	if err := a.c.op(ctx, "whoAmI", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateAPIKey makes an API key (POST /v1/auth/api-keys; platform_admin). body is an APIKeyCreate or a map.
// The secret is in the answer's Key only.
func (a *AuthService) CreateAPIKey(ctx context.Context, body any, opts ...RequestOption) (*APIKeyCreated, error) {
	var out APIKeyCreated
	if err := a.c.op(ctx, "createApiKey", nil, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListAPIKeys lists the API keys, never their secrets (GET /v1/auth/api-keys).
func (a *AuthService) ListAPIKeys(ctx context.Context, opts ...RequestOption) (*APIKeyList, error) {
	var out APIKeyList
	if err := a.c.op(ctx, "listApiKeys", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// RevokeAPIKey revokes an API key (DELETE /v1/auth/api-keys/{id}) and returns it as revoked.
func (a *AuthService) RevokeAPIKey(ctx context.Context, id string, opts ...RequestOption) (*APIKey, error) {
	cl, err := a.c.newCall(opts)
	if err != nil {
		return nil, err
	}
	var out APIKey
	if err := a.c.invoke(ctx, cl, "revokeApiKey", []string{id}, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RotateAPIKey gives a key a new secret (POST /v1/auth/api-keys/{id}/rotate). body is an APIKeyRotate, a
// map, or nil (the old secret stops at once).
func (a *AuthService) RotateAPIKey(ctx context.Context, id string, body any, opts ...RequestOption) (*APIKeyCreated, error) {
	var out APIKeyCreated
	if err := a.c.op(ctx, "rotateApiKey", []string{id}, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ----------------------------------------------------------------------------------------------- Audit

// AuditService groups the audit chain endpoints.
type AuditService struct{ c *Client }

// Events returns audit events with seq > after, oldest first (GET /v1/audit/events; platform_admin,
// auditor, security_officer). Page with WithQuery(map[string]string{"after": "100", "limit": "1000"}).
func (a *AuditService) Events(ctx context.Context, opts ...RequestOption) (*AuditEventList, error) {
	var out AuditEventList
	if err := a.c.op(ctx, "listAuditEvents", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// Head returns the audit chain's newest event (GET /v1/audit/head).
func (a *AuditService) Head(ctx context.Context, opts ...RequestOption) (*AuditHead, error) {
	var out AuditHead
	if err := a.c.op(ctx, "getAuditHead", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ------------------------------------------------------------------------------ budgets and reservations

// CreateBudget creates a monthly budget of a tenant (POST /v1/finops/budgets; platform_admin for any tenant,
// finops for its own). body is a BudgetCreate or a map. The answer carries WebhookSecret (once) when the
// budget has a webhook. Not retried after an error where the server may have acted (see Idempotent).
func (f *FinOpsService) CreateBudget(ctx context.Context, body any, opts ...RequestOption) (*Budget, error) {
	var out Budget
	if err := f.c.op(ctx, "createBudget", nil, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListBudgets lists the budgets the caller may see (a platform key WithTenant: that tenant's), closed ones
// included, oldest first (GET /v1/finops/budgets).
func (f *FinOpsService) ListBudgets(ctx context.Context, opts ...RequestOption) (*BudgetList, error) {
	var out BudgetList
	if err := f.c.op(ctx, "listBudgets", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetBudget returns one budget with its month's standing (GET /v1/finops/budgets/{id}).
func (f *FinOpsService) GetBudget(ctx context.Context, id string, opts ...RequestOption) (*Budget, error) {
	var out Budget
	if err := f.c.op(ctx, "getBudget", []string{id}, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// SupersedeBudget closes a budget at effective_at and opens its successor with the fields given (POST
// /v1/finops/budgets/{id}/supersede). body is a BudgetSupersede, a map, or nil (a copy from now).
func (f *FinOpsService) SupersedeBudget(ctx context.Context, id string, body any, opts ...RequestOption) (*BudgetChange, error) {
	var out BudgetChange
	if err := f.c.op(ctx, "supersedeBudget", []string{id}, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// DisableBudget closes a budget at effectiveAt ("" for now; a date or an RFC 3339 date-time); nothing opens,
// so the answer's Opened is nil (POST /v1/finops/budgets/{id}/disable).
func (f *FinOpsService) DisableBudget(ctx context.Context, id, effectiveAt string, opts ...RequestOption) (*BudgetChange, error) {
	body := map[string]string{}
	if effectiveAt != "" {
		body["effective_at"] = effectiveAt
	}
	var out BudgetChange
	if err := f.c.op(ctx, "disableBudget", []string{id}, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// Reserve holds an estimate against the tenant's enforcing budgets (POST /v1/finops/reservations;
// usage_reporter naming the tenant with WithTenant or TenantID, tenant_admin, developer, platform_admin).
// Granted: a Reservation with Status "held" until ExpiresAt. Refused: an *APIError matching
// ErrBudgetExceeded (402), and nothing is held. A create: retried only when the server surely did not act
// (a 429, a 503, a refused connection), unless Idempotent(true) is given.
func (f *FinOpsService) Reserve(ctx context.Context, req ReservationRequest, opts ...RequestOption) (*Reservation, error) {
	var out Reservation
	if err := f.c.op(ctx, "createReservation", nil, req, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetReservation returns a reservation (GET /v1/finops/reservations/{id}); a hold past its expiry reads
// `expired`.
func (f *FinOpsService) GetReservation(ctx context.Context, id string, opts ...RequestOption) (*Reservation, error) {
	var out Reservation
	if err := f.c.op(ctx, "getReservation", []string{id}, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// CommitReservation records what a reservation actually spent as one usage event (source `reservation`,
// usage type the action) and frees the hold (POST /v1/finops/reservations/{id}/commit). Idempotent (and
// retried as such): a committed reservation is answered as it is. A released one is 409 (ErrConflict).
func (f *FinOpsService) CommitReservation(ctx context.Context, id string, actual Actual, opts ...RequestOption) (*Reservation, error) {
	var out Reservation
	if err := f.c.op(ctx, "commitReservation", []string{id}, map[string]any{"actual": actual}, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReleaseReservation frees a hold without recording usage (POST /v1/finops/reservations/{id}/release).
// Idempotent (and retried as such): a released or expired one is answered as it is; a committed one is 409
// (ErrConflict).
func (f *FinOpsService) ReleaseReservation(ctx context.Context, id string, opts ...RequestOption) (*Reservation, error) {
	var out Reservation
	if err := f.c.op(ctx, "releaseReservation", []string{id}, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetAllocationPolicy returns one allocation policy, open or closed (GET /v1/finops/allocation-policies/{id}).
func (f *FinOpsService) GetAllocationPolicy(ctx context.Context, id string, opts ...RequestOption) (*AllocationPolicy, error) {
	var out AllocationPolicy
	if err := f.c.op(ctx, "getAllocationPolicy", []string{id}, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ------------------------------------------------------------------------------------- plain endpoints

// Healthz calls GET /healthz (liveness; no key needed, the client's is sent anyway) and returns its body.
func (c *Client) Healthz(ctx context.Context, opts ...RequestOption) (json.RawMessage, error) {
	return c.plain(ctx, "healthz", "application/json", opts)
}

// Readyz calls GET /readyz (readiness: the store answers) and returns its body.
func (c *Client) Readyz(ctx context.Context, opts ...RequestOption) (json.RawMessage, error) {
	return c.plain(ctx, "readyz", "application/json", opts)
}

// Metrics returns the Prometheus exposition of GET /metrics, as text.
func (c *Client) Metrics(ctx context.Context, opts ...RequestOption) (string, error) {
	out, err := c.plain(ctx, "metrics", "text/plain, application/json", opts)
	return string(out), err
}

// OpenAPI returns the server's OpenAPI document (GET /openapi.json), its bytes.
func (c *Client) OpenAPI(ctx context.Context, opts ...RequestOption) (json.RawMessage, error) {
	return c.plain(ctx, "openapi", "application/json", opts)
}

func (c *Client) plain(ctx context.Context, id, accept string, opts []RequestOption) (json.RawMessage, error) {
	cl, err := c.newCall(opts)
	if err != nil {
		return nil, err
	}
	cl.accept = accept
	var out json.RawMessage
	if err := c.invoke(ctx, cl, id, nil, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}
