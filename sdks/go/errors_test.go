package eai_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
)

func TestErrorClassesFromTheServer(t *testing.T) {
	ctx := context.Background()

	t.Run("401 bad key", func(t *testing.T) {
		bad := newClient(t, eai.WithAPIKey("eai_live_this_key_does_not_exist_000000"))
		_, err := bad.Auth.WhoAmI(ctx)
		e := mustAPIError(t, err, eai.ErrUnauthorized, 401)
		if e.Code != eai.CodeUnauthorized || e.Attempts != 1 || e.Details != nil {
			t.Fatalf("%+v", e)
		}
		if errors.Is(err, eai.ErrForbidden) || errors.Is(err, eai.ErrTransport) {
			t.Fatal("a 401 matches another sentinel")
		}
	})

	t.Run("403 wrong role", func(t *testing.T) {
		viewer := newClient(t, eai.WithAPIKey(newKey(t, eai.RoleViewer, acme.ID)))
		_, err := viewer.FinOps.CreateAllocationPolicy(ctx, map[string]any{"name": "nope", "gpu_hourly_cost": "1"})
		e := mustAPIError(t, err, eai.ErrForbidden, 403)
		if e.Code != eai.CodeForbidden || errors.Is(err, eai.ErrTenantRequired) {
			t.Fatalf("%+v", e)
		}
		sampler := newClient(t, eai.WithAPIKey(newKey(t, eai.RoleSampler, "")))
		_, err = sampler.FinOps.GpuAllocation(ctx)
		mustAPIError(t, err, eai.ErrForbidden, 403)
	})

	t.Run("403 tenant key naming another tenant", func(t *testing.T) {
		finops := newClient(t, eai.WithAPIKey(newKey(t, eai.RoleFinOps, acme.ID)))
		if _, err := finops.FinOps.GpuAllocation(ctx, eai.WithTenant("acme")); err != nil {
			t.Fatalf("its own tenant: %v", err)
		}
		_, err := finops.FinOps.GpuAllocation(ctx, eai.WithTenant("globex"))
		mustAPIError(t, err, eai.ErrForbidden, 403)
		_, err = finops.FinOps.GpuAllocation(ctx, eai.WithTenant(globex.ID))
		mustAPIError(t, err, eai.ErrForbidden, 403)
	})

	t.Run("404 unknown slug and policy", func(t *testing.T) {
		_, err := admin.FinOps.GpuAllocation(ctx, eai.WithTenant("no-such-tenant"))
		e := mustAPIError(t, err, eai.ErrNotFound, 404)
		if !strings.Contains(e.Message, "no-such-tenant") {
			t.Fatalf("message %q", e.Message)
		}
		_, err = admin.Tenants.Get(ctx, "no-such-tenant")
		mustAPIError(t, err, eai.ErrNotFound, 404)
		_, err = admin.FinOps.SupersedeAllocationPolicy(ctx, "alp_999999", map[string]any{"gpu_hourly_cost": "1"})
		mustAPIError(t, err, eai.ErrNotFound, 404)
		_, err = admin.FinOps.DisableAllocationPolicy(ctx, "alp_999999", nil)
		mustAPIError(t, err, eai.ErrNotFound, 404)
		_, err = admin.Auth.RevokeAPIKey(ctx, "key_999999")
		mustAPIError(t, err, eai.ErrNotFound, 404)
	})

	t.Run("409 duplicate slug", func(t *testing.T) {
		_, err := admin.Tenants.Create(ctx, eai.TenantCreate{Slug: "acme", Name: "Acme again"})
		e := mustAPIError(t, err, eai.ErrConflict, 409)
		if e.Attempts != 1 {
			t.Fatalf("a 409 was retried: %d attempts", e.Attempts)
		}
	})

	t.Run("422 with details", func(t *testing.T) {
		_, err := admin.FinOps.CreateAllocationPolicy(ctx, map[string]any{"name": "bad", "gpu_hourly_cost": "1.12345678901", "bogus": 1})
		e := mustAPIError(t, err, eai.ErrValidation, 422)
		fields := strings.Join(e.Fields(), ",")
		if !strings.Contains(fields, "gpu_hourly_cost") || !strings.Contains(fields, "bogus") {
			t.Fatalf("fields %q: %+v", fields, e.Details)
		}
		// In a list sent in several batches, the detail's index is the position in the caller's list, and
		// the result holds what the earlier batches stored.
		hour := recentHour(7)
		samples := hourOfSamples("GPU-422", "err-422", "", hour)[:5]
		samples[3].Utilization = "1.5"
		res, err := admin.FinOps.GpuSamples(ctx, samples, eai.WithMaxBatchSize(2))
		e = mustAPIError(t, err, eai.ErrValidation, 422)
		if len(e.Details) != 1 || e.Details[0].Index == nil || *e.Details[0].Index != 3 || e.Details[0].Field != "utilization" {
			t.Fatalf("details %+v", e.Details)
		}
		if res == nil || res.Accepted != 2 || res.Requests != 1 {
			t.Fatalf("partial result %+v", res)
		}
		if !strings.Contains(err.Error(), "[3] utilization") {
			t.Fatalf("error text %q", err.Error())
		}
	})

	t.Run("transport error", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + l.Addr().String()
		l.Close()
		c, err := eai.NewClient(eai.WithBaseURL(dead), eai.WithAPIKey(srv.AdminKey), eai.WithMaxRetries(2),
			eai.WithRetryBackoff(time.Millisecond, 5*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Auth.WhoAmI(ctx)
		var te *eai.TransportError
		if !errors.As(err, &te) || !errors.Is(err, eai.ErrTransport) || te.Attempts != 3 {
			t.Fatalf("got %T %v", err, err)
		}
		var apiErr *eai.APIError
		if errors.As(err, &apiErr) {
			t.Fatal("a transport error is not an APIError")
		}
		// A refused connection is retried even for a non-idempotent POST (the server never saw it).
		_, err = c.Tenants.Create(ctx, eai.TenantCreate{Slug: "never", Name: "Never"})
		if !errors.As(err, &te) || te.Attempts != 3 {
			t.Fatalf("POST to a dead server: %v", err)
		}
	})

	t.Run("canceled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := admin.Auth.WhoAmI(cctx)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestPayloadTooLargeAndHalving(t *testing.T) {
	ctx := context.Background()
	small := startServer(t, map[string]string{"EAI_MAX_BATCH": "3000", "EAI_RATE_LIMIT_PER_KEY": "0"})
	c, err := eai.NewClient(eai.WithBaseURL(small.URL), eai.WithAPIKey(small.AdminKey))
	if err != nil {
		t.Fatal(err)
	}
	samples := manySamples("GPU-halving", "halving", 25000)

	// Splitting disabled: the first batch (5,000 > 3,000) gets 413 and nothing is stored.
	res, err := c.FinOps.GpuSamples(ctx, samples[:3500], eai.WithSplitOnPayloadTooLarge(false))
	e := mustAPIError(t, err, eai.ErrPayloadTooLarge, 413)
	if e.Attempts != 1 || res.Accepted != 0 || res.Requests != 0 {
		t.Fatalf("%+v %+v", e, res)
	}

	// Splitting on (the default): 5,000 is halved to 2,500, and the rest of the call goes in batches of
	// 2,500: 10 stored batches after one refused, every sample stored once.
	proxy := newCountingProxy(t, small.URL)
	pc, err := eai.NewClient(eai.WithBaseURL(proxy.URL), eai.WithAPIKey(small.AdminKey))
	if err != nil {
		t.Fatal(err)
	}
	res, err = pc.FinOps.GpuSamples(ctx, samples)
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 25000 || res.Duplicates != 0 || res.Requests != 10 || res.Splits != 1 {
		t.Fatalf("result %+v", res)
	}
	if n := proxy.Count("POST", "/v1/finops/gpu/samples"); n != 11 {
		t.Fatalf("%d requests, want 11 (one 413 then 10 x 2,500)", n)
	}
	statuses := map[int]int{}
	for _, x := range proxy.Exchanges() {
		statuses[x.Status]++
	}
	if statuses[413] != 1 || statuses[200] != 10 {
		t.Fatalf("statuses %v", statuses)
	}
	// The 3,500 refused earlier were not stored by the 413: the server counted none of them as duplicates.
	checkStoredOnce(t, c, "halving", samples)
}

func TestRateLimited(t *testing.T) {
	ctx := context.Background()
	limited := startServer(t, map[string]string{"EAI_RATE_LIMIT_PER_KEY": "1"})
	noRetry, err := eai.NewClient(eai.WithBaseURL(limited.URL), eai.WithAPIKey(limited.AdminKey), eai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	var rateErr error
	for i := 0; i < 5 && rateErr == nil; i++ {
		_, rateErr = noRetry.Auth.WhoAmI(ctx)
	}
	e := mustAPIError(t, rateErr, eai.ErrRateLimited, 429)
	if e.RetryAfter < time.Second || e.Attempts != 1 || !e.Temporary() {
		t.Fatalf("%+v", e)
	}
	// With retries, the client waits Retry-After and gets through.
	withRetry, err := eai.NewClient(eai.WithBaseURL(limited.URL), eai.WithAPIKey(limited.AdminKey), eai.WithMaxRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	var retries []eai.RetryEvent
	start := time.Now()
	for i := 0; i < 2; i++ {
		if _, err := withRetry.Auth.WhoAmI(ctx, eai.WithOnRetry(func(ev eai.RetryEvent) { retries = append(retries, ev) })); err != nil {
			t.Fatalf("call %d with retries: %v", i, err)
		}
	}
	if len(retries) == 0 || !errors.Is(retries[0].Err, eai.ErrRateLimited) || retries[0].Wait < time.Second || time.Since(start) < time.Second {
		t.Fatalf("retries %+v after %v", retries, time.Since(start))
	}
}

func TestFrenchMessages(t *testing.T) {
	ctx := context.Background()
	fr := newClient(t, eai.WithLocale("fr"))
	_, err := fr.Tenants.Get(ctx, "inconnu")
	e := mustAPIError(t, err, eai.ErrNotFound, 404)
	if e.Message != e.MessageI18n["fr"] || e.Message == e.MessageI18n["en"] || !strings.Contains(e.Message, "n'existe pas") {
		t.Fatalf("French message %q (i18n %v)", e.Message, e.MessageI18n)
	}
	// English by default, French on one call only.
	_, err = admin.Tenants.Get(ctx, "inconnu")
	if e := mustAPIError(t, err, eai.ErrNotFound, 404); e.Message != e.MessageI18n["en"] {
		t.Fatalf("default message %q", e.Message)
	}
	_, err = admin.Tenants.Get(ctx, "inconnu", eai.WithLocale("fr"))
	if e := mustAPIError(t, err, eai.ErrNotFound, 404); e.Message != e.MessageI18n["fr"] {
		t.Fatalf("per-call French message %q", e.Message)
	}
	bad := newClient(t, eai.WithLocale("fr"), eai.WithAPIKey("eai_live_unknown_key_for_french_0000"))
	_, err = bad.Auth.WhoAmI(ctx)
	if e := mustAPIError(t, err, eai.ErrUnauthorized, 401); !strings.Contains(e.Message, "Clé d'API") {
		t.Fatalf("French 401 %q", e.Message)
	}
}

func TestSentinels(t *testing.T) {
	cases := []struct {
		code   string
		status int
		want   error
	}{
		{"unauthorized", 401, eai.ErrUnauthorized},
		{"forbidden", 403, eai.ErrForbidden},
		{"tenant_required", 403, eai.ErrTenantRequired},
		{"not_found", 404, eai.ErrNotFound},
		{"method_not_allowed", 405, eai.ErrMethodNotAllowed},
		{"conflict", 409, eai.ErrConflict},
		{"payload_too_large", 413, eai.ErrPayloadTooLarge},
		{"validation_error", 422, eai.ErrValidation},
		{"rate_limited", 429, eai.ErrRateLimited},
		{"internal", 500, eai.ErrInternal},
		{"unavailable", 503, eai.ErrUnavailable},
		{"budget_exceeded", 402, eai.ErrBudgetExceeded},
	}
	all := []error{}
	for _, c := range cases {
		all = append(all, c.want)
	}
	for _, c := range cases {
		err := fmt.Errorf("wrapped: %w", &eai.APIError{Status: c.status, Code: c.code})
		for _, s := range all {
			if errors.Is(err, s) != (s == c.want) {
				t.Errorf("code %s: errors.Is(%v) = %v", c.code, s, errors.Is(err, s))
			}
		}
		if eai.SentinelFor(c.code) != c.want {
			t.Errorf("SentinelFor(%s)", c.code)
		}
	}
}
