package eai_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/enterprise-ai/eai-go/internal/eaitest"
)

// seedSnippet is the seed snippet as given (one statement per line, `if err != nil { log.Fatal(err) }` on
// one line, which gofmt spreads over three in examples/seed/main.go: the comparison ignores white space).
const seedSnippet = `
client, err := eai.NewClient(eai.WithBaseURL("<control-plane-url>"), eai.WithAPIKey(os.Getenv("EAI_API_KEY")), eai.WithTenant("acme"), eai.WithLocale("en"))
if err != nil { log.Fatal(err) }
ctx := context.Background()
_, err = client.FinOps.GpuSamples(ctx, map[string]any{"samples": samples})
_, err = client.FinOps.GpuAllocation(ctx, eai.WithQuery(map[string]string{"from": "2026-10-01", "to": "2026-10-31"}))
_, err = client.FinOps.CreateAllocationPolicy(ctx, map[string]any{"name": "local-gpu-default", "gpu_hourly_cost": "2.50"})
_, err = client.Providers.Catalog(ctx)

// usage package: emit a Usage Event from a local worker
emitter := usage.NewEmitter(client, usage.Options{})
defer emitter.Close(ctx)
`

func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// TestSeedSnippet runs examples/seed (the snippet unchanged; only `<control-plane-url>` substituted, in a
// temporary copy) against the real server, through a proxy that records the status of each call, then
// checks the effects through the API.
func TestSeedSnippet(t *testing.T) {
	ctx := context.Background()
	if _, err := admin.Tenants.Get(ctx, "acme"); err != nil {
		t.Fatalf("tenant acme must be registered first: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(eaitest.ModuleRoot(), "examples", "seed", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "// --- seed snippet (verbatim) ---", "// --- end of seed snippet ---"
	text := string(src)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("examples/seed/main.go lacks the snippet markers")
	}
	if got := squeeze(text[i+len(begin) : j]); got != squeeze(seedSnippet) {
		t.Fatalf("the snippet in examples/seed/main.go differs from the seed snippet:\n%s", text[i+len(begin):j])
	}
	if !strings.Contains(text, `eai.WithBaseURL("<control-plane-url>")`) {
		t.Fatalf("expected <control-plane-url> in the snippet")
	}

	proxy := eaitest.NewProxy(srv.URL)
	defer proxy.Close()
	dir := t.TempDir()
	program := strings.Replace(text, `eai.WithBaseURL("<control-plane-url>")`, `eai.WithBaseURL("`+proxy.URL+`")`, 1)
	gomod := "module seedrun\n\ngo 1.21\n\nrequire github.com/enterprise-ai/eai-go v0.0.0\n\n" +
		"replace github.com/enterprise-ai/eai-go => " + eaitest.ModuleRoot() + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to run the seed program: %v", err)
	}
	cmd := exec.Command(goBin, "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EAI_API_KEY="+srv.AdminKey, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOSUMDB=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run of the seed program failed: %v\n%s", err, out)
	}

	// Every call of the snippet reached the server and succeeded.
	want := []struct {
		method, path string
		status       int
	}{
		{"POST", "/v1/finops/gpu/samples", 200},
		{"GET", "/v1/finops/gpu/allocation", 200},
		{"POST", "/v1/finops/allocation-policies", 201},
		{"GET", "/v1/providers/catalog", 200},
	}
	got := proxy.Exchanges()
	if len(got) != len(want) {
		t.Fatalf("the seed program made %d requests, want %d: %+v", len(got), len(want), got)
	}
	for k, w := range want {
		g := got[k]
		if g.Method != w.method || g.Path != w.path || g.Status != w.status || g.Tenant != "acme" {
			t.Errorf("request %d: got %+v, want %s %s -> %d with X-EAI-Tenant acme", k, g, w.method, w.path, w.status)
		}
	}
	if q := got[1].Query; q != "from=2026-10-01&to=2026-10-31" {
		t.Errorf("allocation query %q", q)
	}

	// Its effects, read back through the API.
	now := time.Now().UTC()
	alloc, err := admin.FinOps.GpuAllocation(ctx, period(now.Add(-3*time.Hour), now.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	row := deploymentRow(alloc, "seed-vllm-llama-70b")
	if row == nil || row.Samples != 40 {
		t.Fatalf("the seed's 40 samples are not in the allocation: %+v", row)
	}
	checkMoney(t, alloc)
	policies, err := admin.FinOps.ListAllocationPolicies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range policies.Items {
		if p.Name == "local-gpu-default" && p.GpuHourlyCost.Equal("2.50") && p.Status == "active" {
			found = true
		}
	}
	if !found {
		t.Errorf("policy local-gpu-default at 2.50 not found: %+v", policies.Items)
	}
	catalog, err := admin.Providers.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found = false
	for _, p := range catalog.Items {
		if p.BaseURL == "http://seed-vllm-llama-70b:8000/v1" && p.Local && p.Discovery == "samples" {
			found = true
		}
	}
	if !found {
		t.Errorf("the seed deployment is not in the catalog: %+v", catalog.Items)
	}
}
