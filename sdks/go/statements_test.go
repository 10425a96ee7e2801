package eai_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
)

// statementsWorld is a server of its own (the month's statements hold only this test's data), its admin
// client, the last hour of the previous month (over, well within the raw retention), that month, the two
// tenants and the first answer of IssueGpuStatements.
//
// Under a flat 10 USD per GPU-hour (no energy price): a shared deployment, one GPU for the hour, 10.00 USD;
// tenant A 500 tokens in + 200 out, tenant B 300 in: A 10.00 x 700/1000 = 7.00 (0.7 of the GPU-hour), B 3.00.
// An idle deployment, one GPU for the hour nobody used: 10.00 USD unallocated, the platform's statement.
type statementsWorld struct {
	c            *eai.Client
	url          string
	hour         time.Time
	month        string
	a, b         *eai.Tenant
	shared, idle string
	first        *eai.StatementIssued
	idemKey      string
}

func (w *statementsWorld) number(t *testing.T, tenantID string) string {
	t.Helper()
	for _, s := range w.first.Issued {
		if s.TenantID == tenantID {
			return s.Number
		}
	}
	t.Fatalf("no statement of %s in %+v", tenantID, w.first)
	return ""
}

func numbers(list []eai.StatementSummary) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		out = append(out, s.Number)
	}
	sort.Strings(out)
	return out
}

func newStatementsWorld(t *testing.T) *statementsWorld {
	t.Helper()
	ctx := context.Background()
	s := startServer(t, nil)
	c, err := eai.NewClient(eai.WithBaseURL(s.URL), eai.WithAPIKey(s.AdminKey), eai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	hour := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).Add(-time.Hour)
	w := &statementsWorld{c: c, url: s.URL, hour: hour, month: hour.Format("2006-01"), shared: "st-shared", idle: "st-idle",
		idemKey: fmt.Sprintf("statements-%d", time.Now().UnixNano())}
	if _, err := c.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "flat", DeploymentPattern: "st-*", Currency: "USD", GpuHourlyCost: "10", EffectiveFrom: "2020-01-01",
	}); err != nil {
		t.Fatal(err)
	}
	samples := append(hourOfSamples("GPU-st-1", w.shared, "", hour), hourOfSamples("GPU-st-2", w.idle, "", hour)...)
	if res, err := c.FinOps.GpuSamples(ctx, samples); err != nil || res.Accepted != 480 {
		t.Fatalf("samples: %+v %v", res, err)
	}
	if w.a, err = c.Tenants.Create(ctx, eai.TenantCreate{Slug: "st-a", Name: "Statements A"}); err != nil {
		t.Fatal(err)
	}
	if w.b, err = c.Tenants.Create(ctx, eai.TenantCreate{Slug: "st-b", Name: "Statements B"}); err != nil {
		t.Fatal(err)
	}
	at := eai.FormatTimestamp(hour.Add(10 * time.Minute))
	events := []eai.UsageEvent{
		{TenantID: w.a.ID, UsageType: "llm_tokens", Source: "gateway", OccurredAt: at, DeploymentID: w.shared,
			Units: map[string]eai.Decimal{"tokens_in": "500", "tokens_out": "200"}},
		{TenantID: w.b.ID, UsageType: "llm_tokens", Source: "gateway", OccurredAt: at, DeploymentID: w.shared,
			Units: map[string]eai.Decimal{"tokens_in": "300"}},
	}
	if res, err := c.Usage.Events(ctx, events); err != nil || res.Accepted != 2 {
		t.Fatalf("usage events: %+v %v", res, err)
	}
	if w.first, err = c.FinOps.IssueGpuStatements(ctx, eai.StatementIssue{Period: w.month}, eai.WithIdempotencyKey(w.idemKey)); err != nil {
		t.Fatal(err)
	}
	return w
}

func moneyIs(t *testing.T, what string, got []eai.Money, amount, currency string) {
	t.Helper()
	if len(got) != 1 || !got[0].Amount.Equal(eai.Decimal(amount)) || got[0].Currency != currency {
		t.Errorf("%s: %+v, want %s %s", what, got, amount, currency)
	}
}

func TestGpuStatements(t *testing.T) {
	ctx := context.Background()
	w := newStatementsWorld(t)
	c := w.c

	t.Run("issue: one per tenant with cost and the unallocated capacity's, numbered", func(t *testing.T) {
		if len(w.first.AlreadyIssued) != 0 || len(w.first.Issued) != 3 {
			t.Fatalf("first issue: %+v", w.first)
		}
		byTenant := map[string]eai.StatementSummary{}
		for _, s := range w.first.Issued {
			byTenant[s.TenantID] = s
			if s.Period != w.month || s.IssuedAt == "" {
				t.Errorf("statement %+v", s)
			}
		}
		moneyIs(t, "A", byTenant[w.a.ID].Totals, "7.00", "USD")
		moneyIs(t, "B", byTenant[w.b.ID].Totals, "3.00", "USD")
		moneyIs(t, "unallocated", byTenant[eai.UnallocatedTenantID].Totals, "10.00", "USD")
		if name := byTenant[w.a.ID].TenantName; name == nil || *name != "Statements A" {
			t.Errorf("tenant_name %v", name)
		}
		want := []string{"ST-" + w.month + "-0001", "ST-" + w.month + "-0002", "ST-" + w.month + "-0003"}
		if got := numbers(w.first.Issued); !slices.Equal(got, want) {
			t.Errorf("numbers %v, want %v", got, want)
		}
	})

	t.Run("issue again: the same key the first answer, a new call nothing twice", func(t *testing.T) {
		retried, err := c.FinOps.IssueGpuStatements(ctx, eai.StatementIssue{Period: w.month}, eai.WithIdempotencyKey(w.idemKey))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(numbers(retried.Issued), numbers(w.first.Issued)) {
			t.Errorf("retried: %+v", retried)
		}
		again, err := c.FinOps.IssueGpuStatements(ctx, map[string]any{"period": w.month})
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Issued) != 0 || !slices.Equal(numbers(again.AlreadyIssued), numbers(w.first.Issued)) {
			t.Errorf("again: %+v", again)
		}
		one, err := c.FinOps.IssueGpuStatements(ctx, eai.StatementIssue{Period: w.month, TenantID: w.b.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(one.Issued) != 0 || !slices.Equal(numbers(one.AlreadyIssued), []string{w.number(t, w.b.ID)}) {
			t.Errorf("one: %+v", one)
		}
		_, err = c.FinOps.IssueGpuStatements(ctx, eai.StatementIssue{Period: time.Now().UTC().Format("2006-01")})
		if e := mustAPIError(t, err, eai.ErrValidation, 422); !slices.Equal(e.Fields(), []string{"period"}) {
			t.Errorf("fields %v", e.Fields())
		}
	})

	t.Run("list: by number, filtered by month and tenant", func(t *testing.T) {
		all, err := c.FinOps.GpuStatements(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, s := range all.Statements {
			got = append(got, s.Number)
		}
		if !slices.Equal(got, numbers(w.first.Issued)) {
			t.Errorf("list order %v", got)
		}
		ofMonth, err := c.FinOps.GpuStatements(ctx, eai.WithMonth(w.hour.Year(), w.hour.Month()))
		if err != nil || len(ofMonth.Statements) != 3 {
			t.Errorf("of the month: %+v %v", ofMonth, err)
		}
		ofA, err := c.FinOps.GpuStatements(ctx, eai.WithQuery(map[string]string{"tenant_id": w.a.ID}))
		if err != nil || !slices.Equal(numbers(ofA.Statements), []string{w.number(t, w.a.ID)}) {
			t.Errorf("of A: %+v %v", ofA, err)
		}
		if len(all.Tenant(w.b.ID)) != 1 {
			t.Errorf("Tenant(B): %+v", all.Tenant(w.b.ID))
		}
		none, err := c.FinOps.GpuStatements(ctx, eai.WithMonth(2020, time.January))
		if err != nil || len(none.Statements) != 0 {
			t.Errorf("2020-01: %+v %v", none, err)
		}
		_, err = c.FinOps.GpuStatements(ctx, eai.WithQueryParam("period", "2026-13"))
		if e := mustAPIError(t, err, eai.ErrValidation, 422); !slices.Equal(e.Fields(), []string{"period"}) {
			t.Errorf("fields %v", e.Fields())
		}
	})

	t.Run("get: the lines and totals match the month's allocation to the cent", func(t *testing.T) {
		st, err := c.FinOps.GpuStatement(ctx, w.number(t, w.a.ID))
		if err != nil {
			t.Fatal(err)
		}
		if st.TenantID != w.a.ID || st.Period != w.month || st.To != ts(w.hour.Add(time.Hour)) || st.IssuedBy == "" {
			t.Errorf("statement %+v", st)
		}
		if len(st.Lines) != 1 {
			t.Fatalf("lines %+v", st.Lines)
		}
		l := st.Lines[0]
		// A's 0.7 of the one GPU-hour, 7.00 USD.
		if l.Kind != eai.StatementLineCharge || l.DeploymentID != w.shared || !l.GpuHours.Equal("0.7") ||
			!l.Amount.Amount.Equal("7.00") || l.Amount.Currency != "USD" {
			t.Errorf("line %+v", l)
		}
		if string(l.Amount.Amount) != "7.00" {
			t.Errorf("amount %q is not the exact decimal string", l.Amount.Amount)
		}
		moneyIs(t, "totals", st.Totals, "7.00", "USD")
		moneyIs(t, "adjusted totals", st.AdjustedTotals, "7.00", "USD")
		if len(st.Adjustments) != 0 {
			t.Errorf("adjustments %+v", st.Adjustments)
		}
		alloc, err := c.FinOps.GpuAllocation(ctx, eai.WithQuery(map[string]string{"from": st.From, "to": st.To}))
		if err != nil {
			t.Fatal(err)
		}
		sum := eai.Decimal("0")
		for _, it := range alloc.Items {
			if it.TenantID == w.a.ID {
				if sum, err = sum.Add(it.Allocated.Amount); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !sum.Equal(st.Totals[0].Amount) {
			t.Errorf("A's allocation of the month %s, statement %s", sum, st.Totals[0].Amount)
		}
		platform, err := c.FinOps.GpuStatement(ctx, w.number(t, eai.UnallocatedTenantID))
		if err != nil {
			t.Fatal(err)
		}
		moneyIs(t, "unallocated", platform.Totals, "10.00", "USD")
		_, err = c.FinOps.GpuStatement(ctx, "ST-"+w.month+"-9999")
		mustAPIError(t, err, eai.ErrNotFound, 404)
	})

	t.Run("CSV: the header line, the charge, the total and the adjusted total", func(t *testing.T) {
		data, err := c.FinOps.GpuStatementCSV(ctx, w.number(t, w.b.ID))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.FieldsFunc(string(data), func(r rune) bool { return r == '\r' || r == '\n' })
		if len(lines) != 4 || lines[0] != "kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency" {
			t.Fatalf("CSV:\n%s", data)
		}
		for i, kind := range []string{"charge", "total", "adjusted_total"} {
			cells := strings.Split(lines[i+1], ",")
			if len(cells) != 7 || cells[0] != kind || cells[5] != "3.00" || cells[6] != "USD" {
				t.Errorf("line %d: %q", i+1, lines[i+1])
			}
		}
	})

	t.Run("a tenant's key sees its own only", func(t *testing.T) {
		k, err := c.Auth.CreateAPIKey(ctx, eai.APIKeyCreate{Role: "viewer", TenantID: w.a.ID, Name: "statements A"})
		if err != nil {
			t.Fatal(err)
		}
		viewer, err := eai.NewClient(eai.WithBaseURL(w.url), eai.WithAPIKey(k.Key), eai.WithMaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		mine := w.number(t, w.a.ID)
		listed, err := viewer.FinOps.GpuStatements(ctx)
		if err != nil || !slices.Equal(numbers(listed.Statements), []string{mine}) {
			t.Errorf("A's list: %+v %v", listed, err)
		}
		if st, err := viewer.FinOps.GpuStatement(ctx, mine); err != nil {
			t.Error(err)
		} else {
			moneyIs(t, "A's own", st.Totals, "7.00", "USD")
		}
		for _, other := range []string{w.number(t, w.b.ID), w.number(t, eai.UnallocatedTenantID)} {
			_, err := viewer.FinOps.GpuStatement(ctx, other)
			mustAPIError(t, err, eai.ErrNotFound, 404)
			_, err = viewer.FinOps.GpuStatementCSV(ctx, other)
			mustAPIError(t, err, eai.ErrNotFound, 404)
		}
		_, err = viewer.FinOps.IssueGpuStatements(ctx, eai.StatementIssue{Period: w.month})
		mustAPIError(t, err, eai.ErrForbidden, 403)
	})

	t.Run("FOCUS: 1.3 by default with AllocatedMethodId, 1.2 without; hourly rows", func(t *testing.T) {
		window := period(w.hour, w.hour.Add(time.Hour))
		header := func(opts ...eai.RequestOption) []string {
			t.Helper()
			data, err := c.FinOps.GpuAllocationFocus(ctx, append([]eai.RequestOption{window}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := focusRows(t, data)
			return h
		}
		dflt, v13, v12 := header(), header(eai.WithFocusVersion(eai.FocusVersion13)), header(eai.WithFocusVersion(eai.FocusVersion12))
		if !slices.Equal(dflt, v13) || !slices.Contains(v13, "AllocatedMethodId") {
			t.Errorf("default %v, 1.3 %v", dflt, v13)
		}
		if slices.Contains(v12, "AllocatedMethodId") || !slices.Contains(v12, "BilledCost") {
			t.Errorf("1.2 %v", v12)
		}
		_, err := c.FinOps.GpuAllocationFocus(ctx, window, eai.WithFocusVersion("1.1"))
		if e := mustAPIError(t, err, eai.ErrValidation, 422); !slices.Equal(e.Fields(), []string{"version"}) {
			t.Errorf("fields %v", e.Fields())
		}
		data, err := c.FinOps.GpuAllocationFocus(ctx, period(w.hour.Add(-time.Hour), w.hour.Add(time.Hour)),
			eai.WithFocusGranularity(eai.FocusGranularityHour))
		if err != nil {
			t.Fatal(err)
		}
		_, rows := focusRows(t, data)
		if len(rows) == 0 {
			t.Fatal("no hourly rows")
		}
		// Only the one hour had samples: every row's charge period starts at it.
		for _, r := range rows {
			if got := strings.Replace(r["ChargePeriodStart"], " ", "T", 1); !strings.HasPrefix(got, w.hour.Format("2006-01-02T15")) {
				t.Errorf("ChargePeriodStart %q, want the hour %s", r["ChargePeriodStart"], ts(w.hour))
			}
		}
	})
}

// TestGpuStatementAdjustment: on a server of its own, a dedicated deployment of one tenant, one GPU for the last
// hour of the previous month at a flat 10 USD per GPU-hour: issued at 10.00. A second GPU's hour arrives after:
// the allocation now is 2 GPU-hours, 20.00; the statement keeps its line and totals (10.00) and shows one
// adjustment of +1 GPU-hour and +10.00 USD, adjusted totals 20.00.
func TestGpuStatementAdjustment(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, nil)
	c, err := eai.NewClient(eai.WithBaseURL(s.URL), eai.WithAPIKey(s.AdminKey), eai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	hour := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).Add(-time.Hour)
	tenant, err := c.Tenants.Create(ctx, eai.TenantCreate{Slug: "adj", Name: "Adjusted"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "flat", DeploymentPattern: "adj-*", Currency: "USD", GpuHourlyCost: "10", EffectiveFrom: "2020-01-01",
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FinOps.GpuSamples(ctx, hourOfSamples("GPU-adj-1", "adj-dedicated", tenant.ID, hour)); err != nil {
		t.Fatal(err)
	}
	out, err := c.FinOps.IssueGpuStatements(ctx, eai.StatementIssue{Period: hour.Format("2006-01")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Issued) != 1 || out.Issued[0].TenantID != tenant.ID {
		t.Fatalf("issued %+v", out)
	}
	moneyIs(t, "issued", out.Issued[0].Totals, "10.00", "USD")

	if _, err := c.FinOps.GpuSamples(ctx, hourOfSamples("GPU-adj-2", "adj-dedicated", tenant.ID, hour)); err != nil {
		t.Fatal(err)
	}
	st, err := c.FinOps.GpuStatement(ctx, out.Issued[0].Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Lines) != 1 || st.Lines[0].Kind != eai.StatementLineCharge || !st.Lines[0].GpuHours.Equal("1") ||
		!st.Lines[0].Amount.Amount.Equal("10.00") {
		t.Errorf("lines %+v", st.Lines)
	}
	moneyIs(t, "totals", st.Totals, "10.00", "USD")
	if len(st.Adjustments) != 1 {
		t.Fatalf("adjustments %+v", st.Adjustments)
	}
	adj := st.Adjustments[0]
	if adj.Kind != eai.StatementLineAdjustment || adj.DeploymentID != "adj-dedicated" || adj.PolicyID != st.Lines[0].PolicyID ||
		!adj.GpuHours.Equal("1") || !adj.Amount.Amount.Equal("10.00") || adj.Amount.Currency != "USD" {
		t.Errorf("adjustment %+v", adj)
	}
	moneyIs(t, "adjusted totals", st.AdjustedTotals, "20.00", "USD")
	data, err := c.FinOps.GpuStatementCSV(ctx, out.Issued[0].Number)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range strings.FieldsFunc(string(data), func(r rune) bool { return r == '\r' || r == '\n' })[1:] {
		kinds = append(kinds, strings.SplitN(l, ",", 2)[0])
	}
	if !slices.Equal(kinds, []string{"charge", "total", "adjustment", "adjusted_total"}) {
		t.Errorf("CSV:\n%s", data)
	}
}
