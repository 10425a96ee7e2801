package eai_test

import (
	"context"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
	"github.com/enterprise-ai/eai-go/internal/eaitest"
)

// manySamples is n samples of one GPU, 15 s windows with distinct timestamps, the newest ending two minutes
// ago (never in the future), the oldest n × 15 s earlier (25,000 samples: about 4.3 days).
func manySamples(gpu, deployment string, n int) []eai.GpuSample {
	end := time.Now().UTC().Truncate(15 * time.Second).Add(-2 * time.Minute)
	out := make([]eai.GpuSample, n)
	for k := 0; k < n; k++ {
		out[k] = eai.GpuSample{
			Node: "gpu-node-7", GpuUUID: gpu, Model: "L40S", Namespace: "eai-inference", Pod: deployment + "-0",
			DeploymentID: deployment, WindowSeconds: "15", Utilization: "0.5", MemoryUsedGB: "20.25", PowerW: "180.5",
			Timestamp: ts(end.Add(-time.Duration(n-1-k) * 15 * time.Second)),
		}
	}
	return out
}

func newCountingProxy(t *testing.T, target string) *eaitest.Proxy {
	t.Helper()
	p := eaitest.NewProxy(target)
	t.Cleanup(p.Close)
	return p
}

// checkStoredOnce reads the allocation over the samples' span and checks the deployment holds exactly them.
func checkStoredOnce(t *testing.T, c *eai.Client, deployment string, samples []eai.GpuSample) {
	t.Helper()
	first, err := time.Parse(time.RFC3339, samples[0].Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	last, err := time.Parse(time.RFC3339, samples[len(samples)-1].Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := c.FinOps.GpuAllocation(context.Background(), period(first.Add(-time.Hour), last.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	row := deploymentRow(alloc, deployment)
	if row == nil || row.Samples != int64(len(samples)) {
		t.Fatalf("deployment %s: %+v, want %d samples", deployment, row, len(samples))
	}
	checkMoney(t, alloc)
}

func TestBatchingOf25000Samples(t *testing.T) {
	ctx := context.Background()
	proxy := newCountingProxy(t, srv.URL)
	c, err := eai.NewClient(eai.WithBaseURL(proxy.URL), eai.WithAPIKey(srv.AdminKey))
	if err != nil {
		t.Fatal(err)
	}
	samples := manySamples("GPU-batch-25k", "batch-25k", 25000)
	res, err := c.FinOps.GpuSamples(ctx, eai.GpuSamplesRequest{Samples: samples})
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 25000 || res.Duplicates != 0 || res.Requests != 5 || res.Splits != 0 {
		t.Fatalf("result %+v", res)
	}
	if n := proxy.Count("POST", "/v1/finops/gpu/samples"); n != 5 {
		t.Fatalf("%d requests, want 5 of 5,000", n)
	}
	checkStoredOnce(t, c, "batch-25k", samples)

	// Sent again with another batch size: every sample is a duplicate, nothing counts twice.
	res, err = c.FinOps.GpuSamples(ctx, samples, eai.WithMaxBatchSize(10000))
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 25000 || res.Duplicates != 25000 || res.Requests != 3 {
		t.Fatalf("re-send %+v", res)
	}
	checkStoredOnce(t, c, "batch-25k", samples)
}
