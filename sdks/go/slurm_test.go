package eai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
)

// TestGpuSlurmReconciliation: a real `sacct --json` capture (testdata/sacct.json, Slurm 22.05) in which job 1
// (account physics) held 2 GPUs and job 2 (account bio) 1 GPU, both for the 20 s from time.start to time.end;
// the samplers' pods job-1 and job-2 measured them busy 90 % and 2 %. On a server of its own (the jobs' hour
// holds only them): job 1 is ok with 40 allocated and measured GPU-seconds, job 2 idle with 20 and 20, the
// idle cost is job 2's; the document goes as bytes, string or a decoded map; idle_below moves the threshold
// and out of range is a validation error naming it; a tenant's key sees no shared job; a sampler none at all.
func TestGpuSlurmReconciliation(t *testing.T) {
	ctx := context.Background()
	doc, err := os.ReadFile("testdata/sacct.json")
	if err != nil {
		t.Fatal(err)
	}
	var sacct struct {
		Jobs []struct {
			Time struct {
				Start int64 `json:"start"`
			} `json:"time"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(doc, &sacct); err != nil || len(sacct.Jobs) != 2 {
		t.Fatalf("sacct.json: %v", err)
	}
	started := time.Unix(sacct.Jobs[0].Time.Start, 0).UTC()
	hour := started.Truncate(time.Hour)
	window := period(hour, hour.Add(time.Hour))

	s := startServer(t, nil)
	c, err := eai.NewClient(eai.WithBaseURL(s.URL), eai.WithAPIKey(s.AdminKey), eai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.FinOps.CreateAllocationPolicy(ctx, eai.AllocationPolicyCreate{
		Name: "slurm", DeploymentPattern: "slurm/*", Currency: "EUR", GpuHourlyCost: "2.10", OverheadPct: "18",
		EffectiveFrom: "2020-01-01",
	}); err != nil {
		t.Fatal(err)
	}
	// 5 s windows ending 5, 10, 15 and 20 s after the jobs started.
	var samples []eai.GpuSample
	for k := 1; k <= 4; k++ {
		end := eai.FormatTimestamp(started.Add(time.Duration(5*k) * time.Second))
		for _, g := range []struct{ gpu, pod, account, util string }{
			{"GPU-0", "job-1", "physics", "0.9"}, {"GPU-1", "job-1", "physics", "0.9"}, {"GPU-2", "job-2", "bio", "0.02"},
		} {
			samples = append(samples, eai.GpuSample{
				Node: "slurm-node-1", GpuUUID: g.gpu, Model: "H100-80GB", Namespace: g.account, Pod: g.pod,
				DeploymentID: "slurm/gpu", WindowSeconds: "5", Utilization: eai.Decimal(g.util), MemoryUsedGB: "10",
				PowerW: "300", Timestamp: end,
			})
		}
	}
	if res, err := c.FinOps.GpuSamples(ctx, samples); err != nil || res.Accepted != 12 {
		t.Fatalf("samples: %+v %v", res, err)
	}

	check := func(r *eai.SlurmReconciliation) {
		t.Helper()
		if r.From != ts(hour) || r.To != ts(hour.Add(time.Hour)) || r.IdleBelow != "0.1" {
			t.Fatalf("period %s..%s, idle_below %s", r.From, r.To, r.IdleBelow)
		}
		if r.AllocatedGpuSeconds != "60" || r.MeasuredGpuSeconds != "60" || len(r.Jobs) != 2 {
			t.Fatalf("totals %s / %s, %d jobs", r.AllocatedGpuSeconds, r.MeasuredGpuSeconds, len(r.Jobs))
		}
		line := func(j *eai.SlurmJobLine) string {
			gpus := "<nil>"
			if j.Gpus != nil {
				gpus = fmt.Sprint(*j.Gpus)
			}
			return fmt.Sprintf("%s %s %s %s %s %s %s %s %s %s %s %s", j.JobID, j.Account, ptr(j.User), ptr(j.Partition),
				ptr(j.State), ptr(j.DeploymentID), gpus, j.AllocatedGpuSeconds, j.MeasuredGpuSeconds, j.BusyGpuSeconds,
				j.BusyShare, j.Status)
		}
		one, two := r.Job("1"), r.Job("2")
		if one == nil || two == nil || r.Job("3") != nil || &r.Jobs[0] != one {
			t.Fatalf("jobs %+v", r.Jobs)
		}
		if got, want := line(one), "1 physics root gpu COMPLETED slurm/gpu 2 40 40 36 0.9 ok"; got != want {
			t.Errorf("job 1:\n got %s\nwant %s", got, want)
		}
		if got, want := line(two), "2 bio root gpu COMPLETED slurm/gpu 1 20 20 0.4 0.02 idle"; got != want {
			t.Errorf("job 2:\n got %s\nwant %s", got, want)
		}
		if one.Status != eai.SlurmJobOK || two.Status != eai.SlurmJobIdle || one.TenantID != nil {
			t.Errorf("statuses %s %s, tenant %v", one.Status, two.Status, one.TenantID)
		}
		if len(one.Cost) != 1 || len(two.Cost) != 1 || !one.Cost[0].Amount.Valid() || two.Amount("EUR") == "0" {
			t.Fatalf("costs %+v %+v", one.Cost, two.Cost)
		}
		if len(r.IdleCost) != 1 || r.IdleCost[0] != two.Cost[0] || !r.IdleAmount("EUR").Equal(two.Amount("EUR")) ||
			r.IdleAmount("USD") != "0" {
			t.Errorf("idle cost %+v, job 2's %+v", r.IdleCost, two.Cost)
		}
	}

	// The bytes as they came, the same as a string, and a decoded document.
	r, err := c.FinOps.GpuSlurmReconciliation(ctx, doc, window)
	if err != nil {
		t.Fatal(err)
	}
	check(r)
	if r, err = c.FinOps.GpuSlurmReconciliation(ctx, string(doc), window); err != nil {
		t.Fatal(err)
	}
	check(r)
	var decoded map[string]any
	if err := json.Unmarshal(doc, &decoded); err != nil {
		t.Fatal(err)
	}
	if r, err = c.FinOps.GpuSlurmReconciliation(ctx, decoded, window); err != nil {
		t.Fatal(err)
	}
	check(r)

	// The threshold: under 1 % both are ok; under 95 % both idle, and the idle cost is both jobs'.
	low, err := c.FinOps.GpuSlurmReconciliation(ctx, json.RawMessage(doc), window, eai.WithIdleBelow("0.01"))
	if err != nil {
		t.Fatal(err)
	}
	if low.IdleBelow != "0.01" || low.Jobs[0].Status != eai.SlurmJobOK || low.Jobs[1].Status != eai.SlurmJobOK || len(low.IdleCost) != 0 {
		t.Errorf("idle_below 0.01: %+v", low)
	}
	high, err := c.FinOps.GpuSlurmReconciliation(ctx, doc, window, eai.WithIdleBelow(eai.MustDecimal("0.95")))
	if err != nil {
		t.Fatal(err)
	}
	both, _ := high.Jobs[0].Amount("EUR").Add(high.Jobs[1].Amount("EUR"))
	if high.Jobs[0].Status != eai.SlurmJobIdle || high.Jobs[1].Status != eai.SlurmJobIdle || !high.IdleAmount("EUR").Equal(both) {
		t.Errorf("idle_below 0.95: %+v", high)
	}

	// Out of range: a validation error naming idle_below; a document without jobs, naming body.
	_, err = c.FinOps.GpuSlurmReconciliation(ctx, doc, window, eai.WithIdleBelow("2"))
	apiErr := mustAPIError(t, err, eai.ErrValidation, http.StatusUnprocessableEntity)
	if f := apiErr.Fields(); len(f) != 1 || f[0] != "idle_below" {
		t.Fatalf("fields %v: %v", f, err)
	}
	_, err = c.FinOps.GpuSlurmReconciliation(ctx, map[string]any{"meta": map[string]any{}}, window)
	if f := mustAPIError(t, err, eai.ErrValidation, http.StatusUnprocessableEntity).Fields(); len(f) != 1 || f[0] != "body" {
		t.Fatalf("fields %v: %v", f, err)
	}
	if _, err = c.FinOps.GpuSlurmReconciliation(ctx, nil, window); !errors.Is(err, eai.ErrConfig) {
		t.Fatalf("nil document: %v", err)
	}

	// Outside the period: no job.
	before, err := c.FinOps.GpuSlurmReconciliation(ctx, doc, period(hour.Add(-time.Hour), hour))
	if err != nil || len(before.Jobs) != 0 || before.AllocatedGpuSeconds != "0" || len(before.IdleCost) != 0 {
		t.Fatalf("the hour before: %+v %v", before, err)
	}

	// A tenant's key sees the jobs of its dedicated deployments only (both ran on shared GPUs); a sampler none.
	owner, err := c.Tenants.Create(ctx, eai.TenantCreate{Slug: "slurm-acme", Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	for role, tenant := range map[string]string{"viewer": owner.ID, "sampler": ""} {
		k, err := c.Auth.CreateAPIKey(ctx, eai.APIKeyCreate{Role: role, TenantID: tenant, Name: "slurm " + role})
		if err != nil {
			t.Fatal(err)
		}
		other, _ := eai.NewClient(eai.WithBaseURL(s.URL), eai.WithAPIKey(k.Key), eai.WithMaxRetries(0))
		mine, err := other.FinOps.GpuSlurmReconciliation(ctx, doc, window)
		if role == "sampler" {
			mustAPIError(t, err, eai.ErrForbidden, http.StatusForbidden)
			continue
		}
		if err != nil || len(mine.Jobs) != 0 || len(mine.IdleCost) != 0 {
			t.Fatalf("%s: %+v %v", role, mine, err)
		}
	}
}
