package eai_test

import (
	"context"
	"errors"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
)

// sameNumber says whether a JSON number or decimal string is the number want ("0.02" equals "0.0200").
func sameNumber(t *testing.T, got, want string) bool {
	t.Helper()
	return got != "" && rat(t, eai.Decimal(got)).Cmp(rat(t, eai.Decimal(want))) == 0
}

func monthStart(t time.Time, plus int) time.Time {
	return time.Date(t.Year(), t.Month()+time.Month(plus), 1, 0, 0, 0, 0, time.UTC)
}

// TestGpuRecommendations: on a server of its own, a deployment on one GPU for two whole hours, 1 % busy, at a
// flat 10 USD per GPU-hour. Each hour is idle (0.01 <= 0.05) and the GPU was idle in 2 of the 2 hours it ran
// (1 >= 0.5): one idle_gpus recommendation, the GPU could go, its 2 idle hours (20.00 USD) saved. A tenant's
// view has none of the shared deployment's; a threshold out of 0..1 is a validation error naming it.
func TestGpuRecommendations(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, nil)
	c, err := eai.NewClient(eai.WithBaseURL(s.URL), eai.WithAPIKey(s.AdminKey), eai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	const deployment, gpu = "idle-llm", "GPU-idle-0"
	hour := recentHour(4)
	if _, err := c.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "flat", DeploymentPattern: deployment, Currency: "USD", GpuHourlyCost: "10", EffectiveFrom: "2020-01-01",
	}); err != nil {
		t.Fatal(err)
	}
	samples := append(hourOfSamples(gpu, deployment, "", hour), hourOfSamples(gpu, deployment, "", hour.Add(time.Hour))...)
	for i := range samples {
		samples[i].Utilization = "0.01"
	}
	if res, err := c.FinOps.GpuSamples(ctx, samples); err != nil || res.Accepted != 480 {
		t.Fatalf("samples: %+v %v", res, err)
	}
	window := period(hour, hour.Add(2*time.Hour))

	recs, err := c.FinOps.GpuRecommendations(ctx, window,
		eai.WithIdleUtilization("0.05"), eai.WithIdleShare("0.5"), eai.WithLowUtilization("0.3"))
	if err != nil {
		t.Fatal(err)
	}
	if recs.From != ts(hour) || recs.To != ts(hour.Add(2*time.Hour)) {
		t.Fatalf("period %s..%s", recs.From, recs.To)
	}
	th := recs.Thresholds
	if !th.IdleUtilization.Equal("0.05") || !th.IdleShare.Equal("0.5") || !th.LowUtilization.Equal("0.3") {
		t.Fatalf("thresholds %+v", th)
	}
	mine := recs.Deployment(deployment)
	if len(mine) != 1 {
		t.Fatalf("%d recommendations of %s: %+v", len(mine), deployment, recs.Items)
	}
	r := mine[0]
	if r.Kind != eai.RecommendationIdleGpus || r.Action != eai.ActionRemoveGpus || r.Model != "H100-80GB" ||
		r.CurrentGpus != 1 || r.Gpus != 1 || r.MigProfile != nil || r.GpuFraction != "" || r.Message == "" {
		t.Fatalf("recommendation %+v", r)
	}
	// 2 GPU-hours 1 % busy: 0.02 busy GPU-hours; the busiest hour 0.01 GPU busy; 61.2 GB of memory throughout.
	e := r.Evidence
	for _, q := range []struct{ name, got, want string }{
		{"gpu_hours", string(e.GpuHours), "2"}, {"busy_gpu_hours", string(e.BusyGpuHours), "0.02"},
		{"utilization", string(e.Utilization), "0.01"}, {"utilization_p50", string(e.UtilizationP50), "0.01"},
		{"utilization_p95", string(e.UtilizationP95), "0.01"}, {"peak_busy_gpus", string(e.PeakBusyGpus), "0.01"},
		{"memory_peak_gb", string(e.MemoryPeakGB), "61.2"}, {"unpriced_gpu_hours", string(e.UnpricedGpuHours), "0"},
	} {
		if !sameNumber(t, q.got, q.want) {
			t.Errorf("evidence %s = %q, want %s", q.name, q.got, q.want)
		}
	}
	if e.Hours != 2 || e.ProfileMemoryGB != "" {
		t.Errorf("evidence hours %d, profile memory %q", e.Hours, e.ProfileMemoryGB)
	}
	if !slices.Equal(e.IdleGpus, []eai.IdleGpu{{GpuUUID: gpu, Hours: 2, IdleHours: 2}}) {
		t.Errorf("idle GPUs %+v", e.IdleGpus)
	}
	// Its 2 idle hours at 10 USD: 20.00 saved over the period; the period is 2 hours, not a calendar month, so
	// a month's is 20.00 x (30 x 24 h) / 2 h = 7200.00.
	if r.Savings == nil || *r.Savings != (eai.Money{Amount: "20.00", Currency: "USD"}) {
		t.Errorf("savings %+v", r.Savings)
	}
	if r.MonthlySavings == nil || *r.MonthlySavings != (eai.Money{Amount: "7200.00", Currency: "USD"}) {
		t.Errorf("monthly savings %+v", r.MonthlySavings)
	}
	if r.Cost == nil || r.Cost.Currency != "USD" {
		t.Errorf("cost %+v", r.Cost)
	}
	// Largest monthly savings first (compared within a currency; the unpriced have none).
	last := map[string]*big.Rat{}
	for _, x := range recs.Items {
		if x.MonthlySavings == nil {
			continue
		}
		v, cur := rat(t, x.MonthlySavings.Amount), x.MonthlySavings.Currency
		if last[cur] != nil && v.Cmp(last[cur]) > 0 {
			t.Errorf("items not by monthly savings, largest first: %+v", recs.Items)
		}
		last[cur] = v
	}

	// A tenant's view: the deployment is shared (no sample names a tenant), so none of its recommendations.
	tenant, err := c.Tenants.Create(ctx, eai.TenantCreate{Slug: "rec-viewer", Name: "Recommendations"})
	if err != nil {
		t.Fatal(err)
	}
	scoped, err := c.FinOps.GpuRecommendations(ctx, window, eai.WithTenant(tenant.ID))
	if err != nil {
		t.Fatal(err)
	}
	if got := scoped.Deployment(deployment); len(got) != 0 {
		t.Errorf("a tenant sees the shared deployment's recommendations: %+v", got)
	}

	// A threshold out of 0..1 is a validation error naming it.
	for _, bad := range []struct {
		opt   eai.RequestOption
		field string
	}{{eai.WithIdleUtilization("1.5"), "idle_utilization"}, {eai.WithLowUtilization("-0.1"), "low_utilization"}} {
		_, err := c.FinOps.GpuRecommendations(ctx, window, bad.opt)
		apiErr := mustAPIError(t, err, eai.ErrValidation, http.StatusUnprocessableEntity)
		if !slices.Equal(apiErr.Fields(), []string{bad.field}) {
			t.Errorf("fields %v, want [%s]", apiErr.Fields(), bad.field)
		}
	}
}

// TestGpuForecast: this month's forecast counts spend up to a midnight UTC and forecasts the days left, a
// tenant's lines summing to its totals; last month's is over (its figures, the band equal to them); another
// period is a validation error naming period.
func TestGpuForecast(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, eai.WithMaxRetries(0))
	now := time.Now().UTC()
	first := monthStart(now, 0)

	f, err := c.FinOps.GpuForecast(ctx, eai.WithMonth(now.Year(), now.Month()))
	if err != nil {
		t.Fatal(err)
	}
	if f.Period != first.Format("2006-01") || f.From != ts(first) || f.To != ts(monthStart(now, 1)) ||
		f.HistoryFrom != ts(first.AddDate(0, 0, -28)) {
		t.Fatalf("forecast of %s: %s..%s, history from %s", f.Period, f.From, f.To, f.HistoryFrom)
	}
	asOf, err := time.Parse(time.RFC3339, f.AsOf)
	if err != nil {
		t.Fatal(err)
	}
	if !asOf.Equal(asOf.Truncate(24*time.Hour)) || asOf.Before(first) || asOf.After(now) {
		t.Fatalf("as_of %s is not a midnight UTC of the month up to now", f.AsOf)
	}
	if want := int64(monthStart(now, 1).Sub(asOf) / (24 * time.Hour)); f.DaysLeft != want {
		t.Errorf("days_left %d, want %d", f.DaysLeft, want)
	}
	le := func(a, b eai.Decimal) bool {
		n, err := a.Cmp(b)
		return err == nil && n <= 0
	}
	for _, l := range f.Lines {
		if !le(l.Spent.Amount, l.Expected.Amount) || !le(l.Spent.Amount, l.Low.Amount) || !le(l.Low.Amount, l.High.Amount) {
			t.Errorf("line %+v: spent <= expected, spent <= low <= high", l)
		}
	}
	for _, tot := range f.Tenants {
		for _, k := range []struct {
			name string
			pick func(spent, expected, low, high eai.Money) eai.Money
		}{
			{"spent", func(s, _, _, _ eai.Money) eai.Money { return s }},
			{"expected", func(_, e, _, _ eai.Money) eai.Money { return e }},
			{"low", func(_, _, l, _ eai.Money) eai.Money { return l }},
			{"high", func(_, _, _, h eai.Money) eai.Money { return h }},
		} {
			sum := eai.Decimal("0")
			for _, l := range f.Lines {
				if ptr(l.TenantID) == ptr(tot.TenantID) && l.Spent.Currency == tot.Spent.Currency {
					if sum, err = sum.Add(k.pick(l.Spent, l.Expected, l.Low, l.High).Amount); err != nil {
						t.Fatal(err)
					}
				}
			}
			if want := k.pick(tot.Spent, tot.Expected, tot.Low, tot.High).Amount; !sum.Equal(want) {
				t.Errorf("tenant %s: its lines' %s sum to %s, its total is %s", ptr(tot.TenantID), k.name, sum, want)
			}
		}
	}
	for _, b := range f.Budgets {
		for _, day := range []*string{b.ExhaustedOn, b.ExhaustedOnHigh} {
			if day != nil && (*day < first.Format("2006-01-02") || *day >= monthStart(now, 1).Format("2006-01-02")) {
				t.Errorf("budget %s: exhausted on %s, outside the month", b.BudgetID, *day)
			}
		}
	}

	last := monthStart(now, -1)
	past, err := c.FinOps.GpuForecast(ctx, eai.WithQuery(map[string]string{"period": last.Format("2006-01")}))
	if err != nil {
		t.Fatal(err)
	}
	if past.DaysLeft != 0 || past.From != ts(last) || past.To != ts(first) || past.AsOf != ts(first) {
		t.Fatalf("last month: %s..%s as of %s, %d days left", past.From, past.To, past.AsOf, past.DaysLeft)
	}
	for _, l := range past.Lines {
		if l.Expected != l.Spent || l.Low != l.Spent || l.High != l.Spent {
			t.Errorf("a month over: %+v", l)
		}
	}

	_, err = c.FinOps.GpuForecast(ctx, eai.WithQuery(map[string]string{"period": "2026-13"}))
	apiErr := mustAPIError(t, err, eai.ErrValidation, http.StatusUnprocessableEntity)
	if !slices.Equal(apiErr.Fields(), []string{"period"}) {
		t.Errorf("fields %v, want [period]", apiErr.Fields())
	}
}

// TestGpuAnomalies: a week's anomalies, newest first, each well formed (id, hour in the period, metric,
// direction, currency for cost only, at least 24 baseline hours); a period that ends before it starts is a
// validation error naming to.
func TestGpuAnomalies(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, eai.WithMaxRetries(0))
	end := recentHour(-1)
	start := end.AddDate(0, 0, -7)
	list, err := c.FinOps.GpuAnomalies(ctx, period(start, end))
	if err != nil {
		t.Fatal(err)
	}
	if list.From != ts(start) || list.To != ts(end) {
		t.Fatalf("period %s..%s", list.From, list.To)
	}
	for i, a := range list.Items {
		hour, err := time.Parse(time.RFC3339, a.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && a.Hour > list.Items[i-1].Hour {
			t.Errorf("not newest first: %s after %s", a.Hour, list.Items[i-1].Hour)
		}
		if !strings.HasPrefix(a.ID, "anm_") || hour.Before(start) || !hour.Before(end) || a.BaselineHours < 24 || a.Message == "" {
			t.Errorf("anomaly %+v", a)
		}
		if (a.Metric != eai.AnomalyMetricCost && a.Metric != eai.AnomalyMetricGpuSeconds) ||
			(a.Direction != eai.AnomalyAbove && a.Direction != eai.AnomalyBelow) ||
			(a.Currency != nil) != (a.Metric == eai.AnomalyMetricCost) {
			t.Errorf("anomaly %+v", a)
		}
		if a.DeviationMads == "" && !sameNumber(t, string(a.BaselineMad), "0") {
			t.Errorf("no deviation with a MAD of %s", a.BaselineMad)
		}
	}

	_, err = c.FinOps.GpuAnomalies(ctx, period(end, start))
	apiErr := mustAPIError(t, err, eai.ErrValidation, http.StatusUnprocessableEntity)
	if !slices.Equal(apiErr.Fields(), []string{"to"}) {
		t.Errorf("fields %v, want [to]", apiErr.Fields())
	}
}

// TestAdviceQueries: the thresholds, the month and the period go in the query as given; a month that does not
// exist is a configuration error, nothing sent.
func TestAdviceQueries(t *testing.T) {
	ctx := context.Background()
	var seen []string
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = append(seen, r.URL.Path+"?"+r.URL.RawQuery)
		return http.DefaultTransport.RoundTrip(r)
	})}
	c := newClient(t, eai.WithMaxRetries(0), eai.WithHTTPClient(hc))
	_, _ = c.FinOps.GpuRecommendations(ctx, eai.WithIdleUtilization("0.05"), eai.WithIdleShare("0.5"), eai.WithLowUtilization(""))
	_, _ = c.FinOps.GpuForecast(ctx, eai.WithMonth(2026, time.November))
	_, _ = c.FinOps.GpuAnomalies(ctx, eai.WithQuery(map[string]string{"from": "2026-11-01", "to": "2026-11-07"}))
	want := []string{
		"/v1/finops/gpu/recommendations?idle_share=0.5&idle_utilization=0.05",
		"/v1/finops/gpu/forecast?period=2026-11",
		"/v1/finops/gpu/anomalies?from=2026-11-01&to=2026-11-07",
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("sent %q, want %q", seen, want)
	}
	if _, err := c.FinOps.GpuForecast(ctx, eai.WithMonth(2026, 13)); !errors.Is(err, eai.ErrConfig) || len(seen) != 3 {
		t.Fatalf("WithMonth(2026, 13): %v, %d requests", err, len(seen))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
