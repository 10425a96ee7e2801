package eai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	eai "github.com/enterprise-ai/eai-go"
)

// eq fails the test unless two decimals are equal (exactly, whatever their places).
func eq(t *testing.T, what string, got eai.Decimal, want string) {
	t.Helper()
	if !got.Equal(eai.Decimal(want)) {
		t.Fatalf("%s = %q, want %s", what, got, want)
	}
}

func TestBudgetsAndReservations(t *testing.T) {
	ctx := context.Background()
	tenant, err := admin.Tenants.Create(ctx, eai.TenantCreate{Slug: "budgets-unit", Name: "Budgets unit"})
	if err != nil {
		t.Fatal(err)
	}

	// create (by the platform admin, for the tenant), with a webhook: the secret is shown once.
	b, err := admin.FinOps.CreateBudget(ctx, eai.BudgetCreate{
		TenantID: tenant.ID, Name: "unit monthly", Limit: eai.Money{Amount: "10.00", Currency: "USD"},
		Enforce: true, WebhookURL: "https://hooks.example.com/eai",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.ID, "bud_") || b.TenantID != tenant.ID || b.Status != "active" || !b.Enforce ||
		!strings.HasPrefix(b.WebhookSecret, "whsec_") || b.Period != "month" || b.Current == nil {
		t.Fatalf("created budget: %+v", b)
	}
	eq(t, "limit", b.Limit.Amount, "10")
	eq(t, "left", b.Current.Left.Amount, "10")
	eq(t, "spent", b.Current.Spent.Amount, "0")

	// get and list: never the secret.
	got, err := admin.FinOps.GetBudget(ctx, b.ID)
	if err != nil || got.ID != b.ID || got.WebhookSecret != "" || got.Current == nil {
		t.Fatalf("GetBudget: %+v %v", got, err)
	}
	finops := newClient(t, eai.WithAPIKey(newKey(t, eai.RoleFinOps, tenant.ID)))
	list, err := finops.FinOps.ListBudgets(ctx)
	if err != nil || len(list.Items) != 1 || list.Items[0].ID != b.ID {
		t.Fatalf("ListBudgets (finops): %+v %v", list, err)
	}
	list, err = admin.FinOps.ListBudgets(ctx, eai.WithTenant(tenant.Slug))
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("ListBudgets (admin WithTenant): %+v %v", list, err)
	}
	_, err = admin.FinOps.GetBudget(ctx, "bud_999999")
	mustAPIError(t, err, eai.ErrNotFound, 404)

	// reserve, commit (idempotent), release of a committed one is 409.
	dev := newClient(t, eai.WithAPIKey(newKey(t, eai.RoleDeveloper, tenant.ID)))
	r, err := dev.FinOps.Reserve(ctx, eai.ReservationRequest{Action: "llm.invoke", Estimate: eai.Estimate{Cost: "4.00", Tokens: 1000}, DeploymentID: "vllm-a"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != eai.ReservationHeld || r.TenantID != tenant.ID || r.Estimate.Currency != "USD" || r.Actual != nil || r.UsageEventID != nil {
		t.Fatalf("reservation: %+v", r)
	}
	eq(t, "estimate", r.Estimate.Cost, "4")
	b2, _ := admin.FinOps.GetBudget(ctx, b.ID)
	eq(t, "held", b2.Current.Held.Amount, "4")
	eq(t, "left", b2.Current.Left.Amount, "6")

	c1, err := dev.FinOps.CommitReservation(ctx, r.ID, eai.Actual{Cost: "3.50", Tokens: 900})
	if err != nil || c1.Status != eai.ReservationCommitted || c1.UsageEventID == nil || c1.Actual == nil {
		t.Fatalf("commit: %+v %v", c1, err)
	}
	eq(t, "actual", c1.Actual.Cost, "3.5")
	c2, err := dev.FinOps.CommitReservation(ctx, r.ID, eai.Actual{Cost: "3.50", Tokens: 900})
	if err != nil || c2.Status != eai.ReservationCommitted || *c2.UsageEventID != *c1.UsageEventID {
		t.Fatalf("commit again: %+v %v", c2, err)
	}
	_, err = dev.FinOps.ReleaseReservation(ctx, r.ID)
	mustAPIError(t, err, eai.ErrConflict, 409)
	g, err := admin.FinOps.GetReservation(ctx, r.ID)
	if err != nil || g.Status != eai.ReservationCommitted {
		t.Fatalf("GetReservation: %+v %v", g, err)
	}
	b3, _ := admin.FinOps.GetBudget(ctx, b.ID)
	eq(t, "spent", b3.Current.Spent.Amount, "3.5")
	eq(t, "held", b3.Current.Held.Amount, "0")

	// release (idempotent); a released one cannot be committed.
	r2, err := dev.FinOps.Reserve(ctx, eai.ReservationRequest{Action: "llm.invoke", Estimate: eai.Estimate{Cost: "2"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		rel, err := dev.FinOps.ReleaseReservation(ctx, r2.ID)
		if err != nil || rel.Status != eai.ReservationReleased {
			t.Fatalf("release %d: %+v %v", i, rel, err)
		}
	}
	_, err = dev.FinOps.CommitReservation(ctx, r2.ID, eai.Actual{Cost: "1"})
	mustAPIError(t, err, eai.ErrConflict, 409)

	// over the limit: 402 budget_exceeded, never retried, nothing held.
	_, err = dev.FinOps.Reserve(ctx, eai.ReservationRequest{Action: "llm.invoke", Estimate: eai.Estimate{Cost: "7.00"}})
	e := mustAPIError(t, err, eai.ErrBudgetExceeded, 402)
	if e.Code != eai.CodeBudgetExceeded || e.Attempts != 1 || !strings.Contains(e.Message, b.ID) || errors.Is(err, eai.ErrConflict) {
		t.Fatalf("402: %+v", e)
	}
	b4, _ := admin.FinOps.GetBudget(ctx, b.ID)
	eq(t, "held after a refusal", b4.Current.Held.Amount, "0")

	// a usage_reporter names the tenant: with WithTenant or the body's tenant_id.
	reporter := newClient(t, eai.WithAPIKey(newKey(t, eai.RoleUsageReporter, "")))
	ra, err := reporter.FinOps.Reserve(ctx, eai.ReservationRequest{Action: "llm.invoke", Estimate: eai.Estimate{Cost: "1"}}, eai.WithTenant(tenant.Slug))
	if err != nil || ra.TenantID != tenant.ID {
		t.Fatalf("reporter WithTenant: %+v %v", ra, err)
	}
	rb, err := reporter.FinOps.Reserve(ctx, eai.ReservationRequest{Action: "llm.invoke", Estimate: eai.Estimate{Cost: "1"}, TenantID: tenant.ID})
	if err != nil || rb.TenantID != tenant.ID {
		t.Fatalf("reporter tenant_id: %+v %v", rb, err)
	}
	if _, err := reporter.FinOps.ReleaseReservation(ctx, ra.ID, eai.WithTenant(tenant.Slug)); err != nil {
		t.Fatal(err)
	}
	if _, err := reporter.FinOps.ReleaseReservation(ctx, rb.ID, eai.WithTenant(tenant.Slug)); err != nil {
		t.Fatal(err)
	}

	// supersede: a new limit from now; the old one closed.
	limit := eai.Money{Amount: "20.00", Currency: "USD"}
	ch, err := admin.FinOps.SupersedeBudget(ctx, b.ID, eai.BudgetSupersede{Limit: &limit})
	if err != nil || ch.Opened == nil || ch.Closed.ID != b.ID || ch.Closed.Status != "closed" || ch.Opened.Status != "active" {
		t.Fatalf("supersede: %+v %v", ch, err)
	}
	eq(t, "new limit", ch.Opened.Limit.Amount, "20")
	if ch.Opened.Name != b.Name || !ch.Opened.Enforce {
		t.Fatalf("fields not carried over: %+v", ch.Opened)
	}
	// Known server issue (README): superseding a closed budget is a 422 about `effective_to` (carried over
	// from the closed budget), not a 409; accept either, so that the fix does not break the test.
	_, err = admin.FinOps.SupersedeBudget(ctx, b.ID, map[string]any{"name": "again"})
	if !errors.Is(err, eai.ErrConflict) && !errors.Is(err, eai.ErrValidation) {
		t.Fatalf("superseding a closed budget: %v", err)
	}
	_, err = admin.FinOps.DisableBudget(ctx, b.ID, "")
	mustAPIError(t, err, eai.ErrConflict, 409)

	// disable: nothing opens; reservations are then unlimited.
	d, err := finops.FinOps.DisableBudget(ctx, ch.Opened.ID, "")
	if err != nil || d.Opened != nil || d.Closed.Status != "closed" {
		t.Fatalf("disable: %+v %v", d, err)
	}
	big, err := dev.FinOps.Reserve(ctx, eai.ReservationRequest{Action: "llm.invoke", Estimate: eai.Estimate{Cost: "500"}})
	if err != nil {
		t.Fatalf("reserve without a budget in force: %v", err)
	}
	if _, err := dev.FinOps.ReleaseReservation(ctx, big.ID); err != nil {
		t.Fatal(err)
	}
	list, err = admin.FinOps.ListBudgets(ctx, eai.WithTenant(tenant.ID))
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list after supersede and disable: %+v %v", list, err)
	}
	for _, it := range list.Items {
		if it.Status != "closed" || it.Current != nil {
			t.Fatalf("closed budget: %+v", it)
		}
	}
}
