package eai_test

import (
	"context"
	"fmt"
	"math/big"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
)

const llama = "meta-llama/Llama-3.1-8B-Instruct"

// sharedOfTwoTenants is the case of crates/api/tests/http/token_costs.rs: a deployment of the test's own at
// a flat 10 USD per GPU-hour, two hours of samples (20.00), two fresh tenants, A 500 tokens in + 200 out per
// hour and B 300 in per hour (70/30 in tokens). It returns the deployment, the tenants and the period.
func sharedOfTwoTenants(t *testing.T, name string, back int) (deployment string, a, b *eai.Tenant, window eai.RequestOption, from, to time.Time) {
	t.Helper()
	ctx := context.Background()
	deployment = fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	from = recentHour(back)
	to = from.Add(2 * time.Hour)
	p, err := admin.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "flat", DeploymentPattern: deployment, Currency: "USD", GpuHourlyCost: "10", EffectiveFrom: "2020-01-01",
	})
	if err != nil {
		t.Fatal(err)
	}
	policies, err := admin.FinOps.ListAllocationPolicies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, stored := range policies.Items {
		if stored.ID == p.ID && stored.OutputTokenWeight != "2.5" {
			t.Fatalf("the default output_token_weight: %q", stored.OutputTokenWeight)
		}
	}
	samples := append(hourOfSamples("GPU-"+deployment, deployment, "", from), hourOfSamples("GPU-"+deployment, deployment, "", from.Add(time.Hour))...)
	if res, err := admin.FinOps.GpuSamples(ctx, samples); err != nil || res.Accepted != 480 {
		t.Fatalf("samples: %+v %v", res, err)
	}
	for i, tenant := range []**eai.Tenant{&a, &b} {
		slug := fmt.Sprintf("%s-%d-%d", name, i, time.Now().UnixNano())
		if *tenant, err = admin.Tenants.Create(ctx, eai.TenantCreate{Slug: slug, Name: slug}); err != nil {
			t.Fatal(err)
		}
	}
	var events []eai.UsageEvent
	for h := 0; h < 2; h++ {
		at := eai.FormatTimestamp(from.Add(time.Duration(h)*time.Hour + 10*time.Minute))
		events = append(events,
			eai.UsageEvent{TenantID: a.ID, UsageType: "llm_tokens", Source: "gateway", OccurredAt: at, DeploymentID: deployment,
				Units: map[string]eai.Decimal{"tokens_in": "500", "tokens_out": "200"}},
			eai.UsageEvent{TenantID: b.ID, UsageType: "llm_tokens", Source: "gateway", OccurredAt: at, DeploymentID: deployment,
				Units: map[string]eai.Decimal{"tokens_in": "300"}})
	}
	if res, err := admin.Usage.Events(ctx, events); err != nil || res.Accepted != 4 {
		t.Fatalf("usage events: %+v %v", res, err)
	}
	return deployment, a, b, period(from, to), from, to
}

func ptr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestGpuTokenCosts(t *testing.T) {
	ctx := context.Background()
	deployment, a, b, window, from, _ := sharedOfTwoTenants(t, "tok-weight", 17)

	// The deployment: 20.00 over 1,600 in and 400 out, no measured time: an output token weighs 2.5 input
	// tokens, input 20 x 1600 / 2600 = 12.307.. -> 12.31, output the rest.
	costs, err := admin.FinOps.GpuTokenCosts(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	if costs.Basis != eai.TokenCostBasisAllocation || costs.Aggregate != eai.TokenCostAggregateDeployment || costs.From != ts(from) {
		t.Fatalf("list: %+v", costs)
	}
	d := costs.Deployment(deployment)
	if d == nil {
		t.Fatalf("no row of %s: %+v", deployment, costs.Items)
	}
	if d.Cost != "20.00" || d.Currency != "USD" || d.AllocationMethod != eai.AllocationMethodWeight || d.TokenSource != eai.TokenSourceUsageEvents {
		t.Fatalf("row %+v", d)
	}
	if d.TokensIn.String() != "1600" || d.TokensOut.String() != "400" || d.Tokens.String() != "2000" || d.OutputTokenWeight != "2.5" {
		t.Fatalf("tokens of %+v", d)
	}
	if d.InputCost != "12.31" || d.OutputCost != "7.69" || d.CostPerMtok != "10000.0000" {
		t.Fatalf("split of %+v", d)
	}
	if d.InputCostPerMtok != "7693.7500" || d.OutputCostPerMtok != "19225.0000" || d.TenantID != nil {
		t.Fatalf("rates of %+v", d)
	}
	if sum := new(big.Int).Add(cents(t, d.InputCost), cents(t, d.OutputCost)); sum.Cmp(cents(t, d.Cost)) != 0 {
		t.Fatalf("input + output != cost: %+v", d)
	}

	// Per tenant: each one's allocated cost over its own tokens, with its deployments.
	byTenant, err := admin.FinOps.GpuTokenCosts(ctx, window, eai.WithQueryParam("aggregate", eai.TokenCostAggregateTenant))
	if err != nil {
		t.Fatal(err)
	}
	ra, rb := byTenant.Tenant(a.ID), byTenant.Tenant(b.ID)
	if ra == nil || rb == nil {
		t.Fatalf("tenant rows: %+v", byTenant.Items)
	}
	if ra.Cost != "14.00" || rb.Cost != "6.00" || ra.CostPerMtok != "10000.0000" || rb.CostPerMtok != "10000.0000" {
		t.Fatalf("A %+v, B %+v", ra, rb)
	}
	if ra.InputCost != "7.00" || ra.OutputCost != "7.00" || rb.InputCost != "6.00" || rb.OutputCost != "0.00" {
		t.Fatalf("splits: A %+v, B %+v", ra, rb)
	}
	if !rb.OutputCostPerMtok.IsZero() {
		t.Fatalf("no output token, no rate: %q", rb.OutputCostPerMtok)
	}
	if len(ra.Deployments) != 1 || ptr(ra.Deployments[0].DeploymentID) != deployment || ra.Deployments[0].Cost != "14.00" {
		t.Fatalf("A's deployments: %+v", ra.Deployments)
	}

	// The usage basis keeps the busy GPU-seconds only: 82 % of 20.00.
	usage, err := admin.FinOps.GpuTokenCosts(ctx, window, eai.WithQueryParam("basis", eai.TokenCostBasisUsage))
	if err != nil {
		t.Fatal(err)
	}
	if r := usage.Deployment(deployment); usage.Basis != eai.TokenCostBasisUsage || r == nil || r.Cost != "16.40" {
		t.Fatalf("usage basis: %+v", usage)
	}

	// A tenant's view: its share only.
	mine, err := admin.FinOps.GpuTokenCosts(ctx, window, eai.WithTenant(b.ID))
	if err != nil {
		t.Fatal(err)
	}
	if len(mine.Items) != 1 || mine.Items[0].Cost != "6.00" || ptr(mine.Items[0].DeploymentID) != deployment {
		t.Fatalf("B's view: %+v", mine.Items)
	}

	_, err = admin.FinOps.GpuTokenCosts(ctx, window, eai.WithQuery(map[string]string{"basis": "list", "aggregate": "pod"}))
	apiErr := mustAPIError(t, err, eai.ErrValidation, 422)
	if got := fmt.Sprint(apiErr.Fields()); got != "[basis aggregate]" {
		t.Fatalf("fields %s", got)
	}
}

func TestGpuAllocationSeries(t *testing.T) {
	ctx := context.Background()
	deployment, a, _, window, from, to := sharedOfTwoTenants(t, "tok-series", 20)

	series, err := admin.FinOps.GpuAllocationSeries(ctx, window, eai.WithQueryParam("step", eai.SeriesStepHour))
	if err != nil {
		t.Fatal(err)
	}
	if series.Step != eai.SeriesStepHour || len(series.Steps) != 2 {
		t.Fatalf("series %+v", series)
	}
	if series.Steps[0].From != ts(from) || series.Steps[1].To != ts(to) {
		t.Fatalf("steps %s..%s, %s..%s", series.Steps[0].From, series.Steps[0].To, series.Steps[1].From, series.Steps[1].To)
	}
	sum := big.NewInt(0)
	for i, step := range series.Steps {
		d := step.Deployment(deployment)
		// 10.00 over 1,000 tokens in each hour: 10000.0000 per million.
		if d == nil || d.Cost != "10.00" || ptr(d.Currency) != "USD" || d.Tokens.String() != "1000" || d.CostPerMtok != "10000.0000" {
			t.Fatalf("step %d: %+v", i, d)
		}
		sum.Add(sum, cents(t, d.Cost))
	}
	if sum.Cmp(big.NewInt(2000)) != 0 {
		t.Fatalf("the steps sum to %s cents, want 20.00", sum)
	}
	// Every column of the steps sums to the period's totals.
	total := series.Total("USD")
	if total == nil {
		t.Fatalf("no USD total: %+v", series.Totals)
	}
	for _, col := range []func(*eai.SeriesTotal) eai.Decimal{
		func(s *eai.SeriesTotal) eai.Decimal { return s.Cost },
		func(s *eai.SeriesTotal) eai.Decimal { return s.Allocated },
		func(s *eai.SeriesTotal) eai.Decimal { return s.Unallocated },
	} {
		steps := big.NewInt(0)
		for i := range series.Steps {
			if st := series.Steps[i].Total("USD"); st != nil {
				steps.Add(steps, cents(t, col(st)))
			}
		}
		if steps.Cmp(cents(t, col(total))) != 0 {
			t.Fatalf("steps %s cents, total %s", steps, col(total))
		}
	}

	// A tenant's view: tenant A's share in each step (7.00), its own tokens.
	mine, err := admin.FinOps.GpuAllocationSeries(ctx, window, eai.WithQueryParam("step", eai.SeriesStepHour), eai.WithTenant(a.ID))
	if err != nil {
		t.Fatal(err)
	}
	for i := range mine.Steps {
		if st := mine.Steps[i].Total("USD"); st == nil || st.Cost != "7.00" {
			t.Fatalf("A's step %d: %+v", i, mine.Steps[i].Totals)
		}
		if d := mine.Steps[i].Deployment(deployment); d == nil || d.CostPerMtok != "10000.0000" {
			t.Fatalf("A's step %d: %+v", i, d)
		}
	}
	if tot := mine.Total("USD"); tot == nil || tot.Cost != "14.00" || mine.Tokens.String() != "1400" {
		t.Fatalf("A's series: %+v", mine)
	}

	_, err = admin.FinOps.GpuAllocationSeries(ctx, window, eai.WithQueryParam("step", "minute"))
	if got := fmt.Sprint(mustAPIError(t, err, eai.ErrValidation, 422).Fields()); got != "[step]" {
		t.Fatalf("fields %s", got)
	}
}

func TestVLLMCountersFromASampler(t *testing.T) {
	ctx := context.Background()
	deployment, a, _, window, from, _ := sharedOfTwoTenants(t, "tok-vllm", 23)
	sampler := newClient(t, eai.WithAPIKey(newKey(t, eai.RoleSampler, "")))
	counters := eai.UsageEvent{
		UsageType: "llm_tokens", Source: "vllm", OccurredAt: eai.FormatTimestamp(from.Add(30 * time.Minute)),
		DeploymentID: deployment, Model: &eai.UsageModel{Provider: "vllm", Name: llama},
		Units: map[string]eai.Decimal{"tokens_in": "10000", "tokens_out": "2000", "cached_tokens_in": "4000",
			"prefill_seconds": "30", "decode_seconds": "90", "requests": "40"},
	}
	if res, err := sampler.Usage.Events(ctx, []eai.UsageEvent{counters}); err != nil || res.Accepted != 1 {
		t.Fatalf("vllm counters without a tenant: %+v %v", res, err)
	}

	// They measure the split (input 20 x 30 / 120 = 5.00) and never weigh the tenants (still 70/30).
	costs, err := admin.FinOps.GpuTokenCosts(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	d := costs.Deployment(deployment)
	if d == nil || d.TokenSource != eai.TokenSourceVLLM || d.AllocationMethod != eai.AllocationMethodComputeTime || ptr(d.Model) != llama {
		t.Fatalf("row %+v", d)
	}
	if d.Tokens.String() != "12000" || d.EffectiveTokensIn.String() != "6000" || d.InputCost != "5.00" || d.OutputCost != "15.00" ||
		d.CostPerMtok != "1666.6667" || d.OutputTokenWeight != "9" {
		t.Fatalf("measured split of %+v", d)
	}
	byTenant, err := admin.FinOps.GpuTokenCosts(ctx, window, eai.WithQueryParam("aggregate", eai.TokenCostAggregateTenant))
	if err != nil {
		t.Fatal(err)
	}
	if ra := byTenant.Tenant(a.ID); ra == nil || ra.Cost != "14.00" || ra.InputCost != "2.00" || ra.OutputCost != "12.00" {
		t.Fatalf("A: %+v", ra)
	}

	// A sampler posts nothing that names a tenant.
	gateway := eai.UsageEvent{TenantID: a.ID, UsageType: "llm_tokens", Source: "gateway", OccurredAt: eai.FormatTimestamp(from),
		DeploymentID: deployment, Units: map[string]eai.Decimal{"tokens_in": "1"}}
	_, err = sampler.Usage.Events(ctx, []eai.UsageEvent{gateway})
	mustAPIError(t, err, eai.ErrForbidden, 403)
}

func TestOutputTokenWeightOfAPolicy(t *testing.T) {
	ctx := context.Background()
	pattern := fmt.Sprintf("otw-%d-*", time.Now().UnixNano())
	created, err := admin.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "weighted", DeploymentPattern: pattern, GpuHourlyCost: "1", OutputTokenWeight: "4.25",
	})
	if err != nil {
		t.Fatal(err)
	}
	change, err := admin.FinOps.SupersedeAllocationPolicy(ctx, created.ID, eai.AllocationPolicySupersede{OutputTokenWeight: "3"})
	if err != nil {
		t.Fatal(err)
	}
	if change.Closed.OutputTokenWeight != "4.25" || change.Opened.OutputTokenWeight != "3" {
		t.Fatalf("closed %q, opened %q", change.Closed.OutputTokenWeight, change.Opened.OutputTokenWeight)
	}
	_, err = admin.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "too light", DeploymentPattern: pattern, GpuHourlyCost: "1", OutputTokenWeight: "0.05",
	})
	if got := fmt.Sprint(mustAPIError(t, err, eai.ErrValidation, 422).Fields()); got != "[output_token_weight]" {
		t.Fatalf("fields %s", got)
	}
}
