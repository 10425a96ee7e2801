package eai_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
	"github.com/enterprise-ai/eai-go/internal/eaitest"
)

// faultClient is a client of the shared server through a fault proxy, with short backoffs.
func faultClient(t *testing.T, opts ...eai.ClientOption) (*eai.Client, *eaitest.Proxy) {
	t.Helper()
	proxy := eaitest.NewProxy(srv.URL)
	t.Cleanup(proxy.Close)
	all := append([]eai.ClientOption{eai.WithBaseURL(proxy.URL), eai.WithAPIKey(srv.AdminKey),
		eai.WithRetryBackoff(5*time.Millisecond, 20*time.Millisecond)}, opts...)
	c, err := eai.NewClient(all...)
	if err != nil {
		t.Fatal(err)
	}
	return c, proxy
}

const samplesPath = "/v1/finops/gpu/samples"

func TestRetriesThroughAFaultProxy(t *testing.T) {
	ctx := context.Background()

	t.Run("503 before the server: retried, counted once", func(t *testing.T) {
		c, proxy := faultClient(t)
		proxy.Inject(eaitest.Fault{Method: "POST", Path: samplesPath, Times: 2, Status: 503})
		samples := hourOfSamples("GPU-retry-503", "retry-503", "", recentHour(9))
		var attempts []int
		res, err := c.FinOps.GpuSamples(ctx, samples, eai.WithOnRetry(func(ev eai.RetryEvent) { attempts = append(attempts, ev.Attempt) }))
		if err != nil {
			t.Fatal(err)
		}
		if res.Accepted != 240 || res.Duplicates != 0 {
			t.Fatalf("%+v", res)
		}
		if n := proxy.Count("POST", samplesPath); n != 3 || len(attempts) != 2 || attempts[1] != 2 {
			t.Fatalf("%d requests, retries %v", n, attempts)
		}
		checkStoredOnce(t, admin, "retry-503", samples)
	})

	t.Run("answer lost after the server stored: retried samples counted once", func(t *testing.T) {
		c, proxy := faultClient(t)
		// The server stores the batch each time, but the client gets 503 twice, then the third answer.
		proxy.Inject(eaitest.Fault{Method: "POST", Path: samplesPath, Times: 2, Status: 503, Forward: true})
		// Samples without a timestamp, one per GPU: the SDK stamps them once, before the first attempt, so
		// the three attempts carry the same (gpu_uuid, timestamp) keys.
		var samples []map[string]any
		for g := 0; g < 5; g++ {
			samples = append(samples, map[string]any{
				"node": "gpu-node-1", "gpu_uuid": fmt.Sprintf("GPU-lost-%d", g), "model": "H100-80GB",
				"namespace": "ns", "pod": "lost-0", "deployment_id": "retry-lost", "window_seconds": 15,
				"utilization": "0.5", "memory_used_gb": 10, "power_w": 300,
			})
		}
		start := time.Now().UTC()
		res, err := c.FinOps.GpuSamples(ctx, map[string]any{"samples": samples})
		if err != nil {
			t.Fatal(err)
		}
		if n := proxy.Count("POST", samplesPath); n != 3 {
			t.Fatalf("%d requests, want 3", n)
		}
		// The three attempts carry one Idempotency-Key: the second and third are answered the first's answer
		// again (all 5 accepted, none a duplicate), not run again.
		if res.Accepted != 5 || res.Duplicates != 0 {
			t.Fatalf("result %+v: the retries were not answered the first answer again", res)
		}
		alloc, err := admin.FinOps.GpuAllocation(ctx, period(start.Add(-time.Hour), start.Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		if row := deploymentRow(alloc, "retry-lost"); row == nil || row.Samples != 5 || row.Gpus != 5 {
			t.Fatalf("stored %+v, want 5 samples once", row)
		}
	})

	t.Run("dropped connection after the server stored: retried, counted once", func(t *testing.T) {
		c, proxy := faultClient(t)
		proxy.Inject(eaitest.Fault{Method: "POST", Path: samplesPath, Times: 1, Forward: true, Drop: true})
		samples := hourOfSamples("GPU-retry-drop", "retry-drop", "", recentHour(10))
		res, err := c.FinOps.GpuSamples(ctx, samples)
		if err != nil {
			t.Fatal(err)
		}
		// The retry carries the first attempt's Idempotency-Key: the first answer, replayed.
		if res.Accepted != 240 || res.Duplicates != 0 || proxy.Count("POST", samplesPath) != 2 {
			t.Fatalf("%+v after %d requests", res, proxy.Count("POST", samplesPath))
		}
		checkStoredOnce(t, admin, "retry-drop", samples)
	})

	t.Run("usage events: lost answer, same ids, stored once", func(t *testing.T) {
		c, proxy := faultClient(t)
		proxy.Inject(eaitest.Fault{Method: "POST", Path: "/v1/usage/events", Times: 1, Status: 500, Forward: true})
		hour := recentHour(11)
		ingestHour(t, "GPU-retry-usage", "retry-usage", hour)
		events := []eai.UsageEvent{{UsageType: "gpu", Source: "worker", OccurredAt: eai.FormatTimestamp(hour.Add(time.Minute)),
			DeploymentID: "retry-usage", Units: map[string]eai.Decimal{"gpu_seconds": "900"}}}
		res, err := c.Usage.Events(ctx, events, eai.WithTenant("acme"))
		if err != nil || res.Accepted != 1 || proxy.Count("POST", "/v1/usage/events") != 2 {
			t.Fatalf("%+v %v after %d requests", res, err, proxy.Count("POST", "/v1/usage/events"))
		}
		if got := itemGpuSeconds(t, hour, "retry-usage", acme.ID); got != "900" {
			t.Fatalf("acme's gpu_seconds %s, want 900 (once)", got)
		}
	})

	t.Run("429 with Retry-After is honored", func(t *testing.T) {
		c, proxy := faultClient(t)
		proxy.Inject(eaitest.Fault{Method: "GET", Path: "/v1/finops/gpu/allocation", Times: 1, Status: 429, RetryAfter: "1"})
		var waits []time.Duration
		start := time.Now()
		if _, err := c.FinOps.GpuAllocation(ctx, eai.WithOnRetry(func(ev eai.RetryEvent) { waits = append(waits, ev.Wait) })); err != nil {
			t.Fatal(err)
		}
		if len(waits) != 1 || waits[0] != time.Second || time.Since(start) < time.Second || proxy.Count("GET", "/v1/finops/gpu/allocation") != 2 {
			t.Fatalf("waits %v, elapsed %v", waits, time.Since(start))
		}
		// Above WithMaxRetryAfter: not waited for, raised at once.
		proxy.Inject(eaitest.Fault{Method: "GET", Path: "/v1/providers/catalog", Times: 1, Status: 429, RetryAfter: "3600"})
		waits = nil
		start = time.Now()
		_, err := c.Providers.Catalog(ctx, eai.WithMaxRetryAfter(10*time.Millisecond), eai.WithOnRetry(func(ev eai.RetryEvent) { waits = append(waits, ev.Wait) }))
		var rl *eai.RateLimitError
		if !errors.As(err, &rl) || rl.Attempts != 1 || rl.RetryAfter != time.Hour || len(waits) != 0 || time.Since(start) > 5*time.Second {
			t.Fatalf("%v, waits %v", err, waits)
		}
	})

	t.Run("retries exhausted", func(t *testing.T) {
		c, proxy := faultClient(t, eai.WithMaxRetries(2))
		proxy.Inject(eaitest.Fault{Method: "GET", Path: "/v1/tenants", Times: 10, Status: 503})
		_, err := c.Tenants.List(ctx)
		e := mustAPIError(t, err, eai.ErrUnavailable, 503)
		if e.Attempts != 3 || proxy.Count("GET", "/v1/tenants") != 3 {
			t.Fatalf("attempts %d, requests %d", e.Attempts, proxy.Count("GET", "/v1/tenants"))
		}
	})

	t.Run("POST: 500 and 503 retried (the Idempotency-Key makes it safe)", func(t *testing.T) {
		c, proxy := faultClient(t)
		proxy.Inject(eaitest.Fault{Method: "POST", Path: "/v1/tenants", Times: 1, Status: 500})
		var resp eai.Response
		if _, err := c.Tenants.Create(ctx, eai.TenantCreate{Slug: "retry-500", Name: "R"}, eai.WithResponse(&resp)); err != nil {
			t.Fatal(err)
		}
		if resp.Attempts != 2 || len(resp.IdempotencyKey) != 36 {
			t.Fatalf("%+v", resp)
		}
		proxy.Inject(eaitest.Fault{Method: "POST", Path: "/v1/tenants", Times: 2, Status: 503})
		if _, err := c.Tenants.Create(ctx, eai.TenantCreate{Slug: "retry-503", Name: "R"}); err != nil {
			t.Fatal(err)
		}
		if n := proxy.Count("POST", "/v1/tenants"); n != 2+3 {
			t.Fatalf("%d requests", n)
		}
	})

	t.Run("other 4xx never retried", func(t *testing.T) {
		c, proxy := faultClient(t)
		_, err := c.FinOps.GpuSamples(ctx, []map[string]any{{"node": "x"}})
		e := mustAPIError(t, err, eai.ErrValidation, 422)
		if e.Attempts != 1 || proxy.Count("POST", samplesPath) != 1 || len(e.Details) == 0 {
			t.Fatalf("%+v", e)
		}
	})

	t.Run("context canceled during the backoff", func(t *testing.T) {
		c, proxy := faultClient(t)
		proxy.Inject(eaitest.Fault{Method: "GET", Path: "/v1/auth/whoami", Times: 5, Status: 429, RetryAfter: "30"})
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Auth.WhoAmI(cctx)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, eai.ErrRateLimited) || time.Since(start) > 5*time.Second {
			t.Fatalf("got %v after %v", err, time.Since(start))
		}
	})

	t.Run("per-attempt timeout is a transport error, retried for a GET", func(t *testing.T) {
		c, proxy := faultClient(t, eai.WithTimeout(500*time.Millisecond))
		proxy.Inject(eaitest.Fault{Method: "GET", Path: "/v1/auth/whoami", Times: 1, Delay: 3 * time.Second})
		if _, err := c.Auth.WhoAmI(ctx); err != nil || proxy.Count("GET", "/v1/auth/whoami") != 2 {
			t.Fatalf("%v after %d", err, proxy.Count("GET", "/v1/auth/whoami"))
		}
		proxy.Inject(eaitest.Fault{Method: "GET", Path: "/v1/auth/whoami", Times: 5, Delay: 3 * time.Second})
		_, err := c.Auth.WhoAmI(ctx, eai.WithMaxRetries(1))
		var te *eai.TransportError
		if !errors.As(err, &te) || te.Attempts != 2 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
	})
}

// ingestHour stores a whole hour of samples of a shared deployment.
func ingestHour(t *testing.T, gpu, deployment string, hour time.Time) {
	t.Helper()
	if _, err := admin.FinOps.GpuSamples(context.Background(), hourOfSamples(gpu, deployment, "", hour)); err != nil {
		t.Fatal(err)
	}
}

// itemGpuSeconds is the gpu_seconds of a tenant's item on a deployment in an hour ("" if none).
func itemGpuSeconds(t *testing.T, hour time.Time, deployment, tenantID string) string {
	t.Helper()
	alloc, err := admin.FinOps.GpuAllocation(context.Background(), period(hour, hour.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	checkMoney(t, alloc)
	for _, it := range alloc.Items {
		if it.DeploymentID == deployment && it.TenantID == tenantID {
			return it.GpuSeconds.String()
		}
	}
	return ""
}
