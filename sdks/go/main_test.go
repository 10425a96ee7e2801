package eai_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
	"github.com/enterprise-ai/eai-go/internal/eaitest"
)

// The package's tests run against one real `eai-gpu serve` (started by TestMain on a fresh SQLite data dir);
// tests that need other limits start their own.
var (
	srv    *eaitest.Server
	admin  *eai.Client // platform_admin, no tenant
	acme   *eai.Tenant
	globex *eai.Tenant
	// basePolicy prices every deployment from 2020 on (USD 10/GPU-hour).
	basePolicy string
	// stopAtExit are the helpers (the fault proxy) stopped when the tests end.
	stopAtExit []func()
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	// The per-key rate limit is off on the shared server so that retries and request counts are
	// deterministic; TestRateLimited starts a server with EAI_RATE_LIMIT_PER_KEY=1.
	srv, err = eaitest.Start(map[string]string{"EAI_RATE_LIMIT_PER_KEY": "0"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FATAL: cannot start the eai-gpu server the tests need:", err)
		return 1
	}
	defer srv.Stop()
	defer func() {
		for _, stop := range stopAtExit {
			stop()
		}
	}()
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "FATAL: setup:", err, "\nserver log:\n", srv.LogTail(3000))
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "server log (tail):\n", srv.LogTail(3000))
	}
	return code
}

func setup() error {
	ctx := context.Background()
	var err error
	admin, err = eai.NewClient(eai.WithBaseURL(srv.URL), eai.WithAPIKey(srv.AdminKey))
	if err != nil {
		return err
	}
	if acme, err = admin.Tenants.Create(ctx, eai.TenantCreate{Slug: "acme", Name: "Acme Corp"}); err != nil {
		return err
	}
	if globex, err = admin.Tenants.Create(ctx, map[string]any{"slug": "globex", "name": "Globex"}); err != nil {
		return err
	}
	p, err := admin.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "base", Currency: "USD", GpuHourlyCost: "10", EffectiveFrom: "2020-01-01",
	})
	if err != nil {
		return err
	}
	basePolicy = p.ID
	return nil
}

// newClient is a client of the shared server with the admin key and opts.
func newClient(t *testing.T, opts ...eai.ClientOption) *eai.Client {
	t.Helper()
	all := append([]eai.ClientOption{eai.WithBaseURL(srv.URL), eai.WithAPIKey(srv.AdminKey)}, opts...)
	c, err := eai.NewClient(all...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// startServer starts a server of its own for a test (stopped at its end); failing to start fails the test.
func startServer(t *testing.T, env map[string]string) *eaitest.Server {
	t.Helper()
	s, err := eaitest.Start(env)
	if err != nil {
		t.Fatalf("cannot start an eai-gpu server with %v: %v", env, err)
	}
	t.Cleanup(s.Stop)
	return s
}

// newKey makes an API key of a role (and tenant) with the admin client and returns its secret.
func newKey(t *testing.T, role, tenantID string) string {
	t.Helper()
	k, err := admin.Auth.CreateAPIKey(context.Background(), eai.APIKeyCreate{Role: role, TenantID: tenantID, Name: role + " test key"})
	if err != nil {
		t.Fatalf("CreateAPIKey(%s): %v", role, err)
	}
	return k.Key
}

// recentHour is the start of the whole UTC hour `back` hours ago.
func recentHour(back int) time.Time {
	return time.Now().UTC().Truncate(time.Hour).Add(-time.Duration(back) * time.Hour)
}

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// hourOfSamples is 240 samples of 15 s covering [hour, hour+1h) of one GPU.
func hourOfSamples(gpu, deployment, tenantID string, hour time.Time) []eai.GpuSample {
	out := make([]eai.GpuSample, 0, 240)
	for k := 1; k <= 240; k++ {
		out = append(out, eai.GpuSample{
			Node: "gpu-node-3", GpuUUID: gpu, Model: "H100-80GB", Namespace: "eai-inference",
			Pod: deployment + "-0", DeploymentID: deployment, TenantID: tenantID,
			WindowSeconds: "15", Utilization: "0.82", MemoryUsedGB: "61.2", PowerW: "400",
			Timestamp: ts(hour.Add(time.Duration(k) * 15 * time.Second)),
		})
	}
	return out
}

func deploymentRow(a *eai.Allocation, id string) *eai.AllocationDeployment {
	for i := range a.Deployments {
		if a.Deployments[i].DeploymentID == id {
			return &a.Deployments[i]
		}
	}
	return nil
}

func period(from, to time.Time) eai.RequestOption {
	return eai.WithQuery(map[string]string{"from": ts(from), "to": ts(to)})
}

// cents is an amount in integer cents (exact, math/big).
func cents(t *testing.T, d eai.Decimal) *big.Int {
	t.Helper()
	c, err := d.ScaledInt(2)
	if err != nil {
		t.Fatalf("amount %q: %v", d, err)
	}
	return c
}

// checkMoney verifies, in integer cents, that allocated + unallocated == cost for every deployment row,
// and that every amount is a decimal string (two places when priced in USD or EUR).
func checkMoney(t *testing.T, a *eai.Allocation) {
	t.Helper()
	for _, d := range a.Deployments {
		for _, m := range []eai.Decimal{d.Cost, d.Allocated, d.Unallocated} {
			// Rounded to the minor unit of the currency (2 places for USD and EUR); an unpriced row has
			// no currency (and amounts of "0"). Known server inconsistency (reported, see README): in a
			// tenant-scoped view `unallocated` is written "0" instead of "0.00", so at most 2 places here.
			if !m.Valid() || (d.Currency != nil && m.Places() > 2) {
				t.Errorf("deployment %s: amount %q is not a decimal string of its currency", d.DeploymentID, m)
			}
		}
		sum := new(big.Int).Add(cents(t, d.Allocated), cents(t, d.Unallocated))
		if sum.Cmp(cents(t, d.Cost)) != 0 {
			t.Errorf("deployment %s: allocated %s + unallocated %s != cost %s", d.DeploymentID, d.Allocated, d.Unallocated, d.Cost)
		}
	}
	for _, it := range a.Items {
		if !it.Allocated.Amount.Valid() {
			t.Errorf("item amount %q is not a decimal string", it.Allocated.Amount)
		}
	}
}

func mustAPIError(t *testing.T, err error, sentinel error, status int) *eai.APIError {
	t.Helper()
	if err == nil {
		t.Fatalf("expected an error matching %v, got nil", sentinel)
	}
	var apiErr *eai.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("expected an *eai.APIError, got %T: %v", err, err)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("errors.Is(%v, %v) is false (code %q)", err, sentinel, apiErr.Code)
	}
	if apiErr.Status != status {
		t.Fatalf("status %d, want %d: %v", apiErr.Status, status, err)
	}
	if apiErr.Message == "" || apiErr.MessageI18n["en"] == "" || apiErr.MessageI18n["fr"] == "" || apiErr.RequestID == "" {
		t.Fatalf("incomplete envelope: %+v", apiErr)
	}
	return apiErr
}
