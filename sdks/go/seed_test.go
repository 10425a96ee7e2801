package eai_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
	"github.com/enterprise-ai/eai-go/internal/eaitest"
)

// The seed's snippets are kept byte for byte in <repo>/sdks/seed/sdk-examples.txt (see its README): the Go
// snippet is every line after the heading line "Go" to the end of the file.
const (
	seedFile    = "sdks/seed/sdk-examples.txt"
	seedHeading = "Go"
	// placeholders the seed leaves to the reader, and the README's path of a checkout.
	controlPlaneURL = "<control-plane-url>"
	readmeCheckout  = "/path/to/eai-gpu"
)

// seedGoLines returns the seed's Go snippet, line by line, byte for byte (the blank lines around it dropped).
func seedGoLines(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(eaitest.RepoRoot(), seedFile))
	if err != nil {
		t.Fatalf("the repository copy of the seed's snippets: %v", err)
	}
	lines := strings.Split(string(raw), "\n")
	start := -1
	for i, l := range lines {
		if l == seedHeading {
			start = i + 1
		}
	}
	if start < 0 {
		t.Fatalf("%s has no %q heading line", seedFile, seedHeading)
	}
	snippet := trimBlankLines(lines[start:])
	if len(snippet) == 0 {
		t.Fatalf("%s: the %s section is empty", seedFile, seedHeading)
	}
	return snippet
}

func trimBlankLines(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// readmeQuickStart returns the README's first Go code block split into its import declaration and the
// statements after it.
func readmeQuickStart(t *testing.T) (imports, statements []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(eaitest.ModuleRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	open := -1
	for i, l := range lines {
		if open < 0 && l == "```go" {
			open = i + 1
		} else if open >= 0 && l == "```" {
			block := lines[open:i]
			if len(block) == 0 || block[0] != "import (" {
				t.Fatalf("README.md: the first Go block must start with its imports, `import (`: %q", block)
			}
			for j, b := range block {
				if b == ")" {
					return block[:j+1], trimBlankLines(block[j+1:])
				}
			}
			t.Fatalf("README.md: the first Go block's import declaration is not closed")
		}
	}
	t.Fatalf("README.md has no Go code block")
	return nil, nil
}

// readmeGoModEdit returns the README's command that points a module at this checkout, with its placeholder
// path replaced by the repository's.
func readmeGoModEdit(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(eaitest.ModuleRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "go mod edit ") && strings.Contains(l, "-replace github.com/enterprise-ai/eai-go=") {
			if !strings.Contains(l, readmeCheckout+"/sdks/go") {
				t.Fatalf("README.md: the go mod edit line should name the checkout %s/sdks/go: %s", readmeCheckout, l)
			}
			return strings.Fields(strings.ReplaceAll(l, readmeCheckout, eaitest.RepoRoot()))
		}
	}
	t.Fatal("README.md has no `go mod edit … -replace github.com/enterprise-ai/eai-go=…` line")
	return nil
}

// harnessImports are what the supplied definitions and the serving below the snippet use.
var harnessImports = []string{"fmt", "io", "log", "net", "net/http", "os", "sync/atomic", "time"}

// harnessHead defines what the seed leaves undefined, samples and llmHandler, at the top of main.
const harnessHead = `func main() {
	// Supplied by seed_test.go: the seed leaves samples and llmHandler to the reader.
	samples := seedSamples()
	llmHandler := http.HandlerFunc(serveLLM)

	// The seed's snippet, byte for byte (only <control-plane-url> replaced).
`

// harnessTail serves what the snippet registered on http.DefaultServeMux until stdin is closed, then
// returns, which runs the snippet's deferred emitter.Close(ctx).
const harnessTail = `
	// Supplied by seed_test.go: check the snippet's last error, then serve http.DefaultServeMux.
	if err != nil {
		log.Fatalf("seed program: the snippet's last call failed: %v", err)
	}
	ln, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		log.Fatal(lerr)
	}
	server := &http.Server{Handler: http.DefaultServeMux}
	go server.Serve(ln)
	fmt.Printf("serving http://%s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = server.Shutdown(ctx)
	fmt.Printf("llm handler calls: %d\n", llmCalls.Load())
}

var llmCalls atomic.Int64

// serveLLM stands for the model call the gateway protects.
func serveLLM(w http.ResponseWriter, r *http.Request) {
	llmCalls.Add(1)
	_, _ = io.WriteString(w, "ok")
}

// seedSamples are the samples the snippet sends: 40 windows of 15 s of one GPU, ending half an hour ago.
func seedSamples() []map[string]any {
	end := time.Now().UTC().Truncate(15 * time.Second).Add(-30 * time.Minute)
	samples := make([]map[string]any, 0, 40)
	for k := 39; k >= 0; k-- {
		samples = append(samples, map[string]any{
			"node": "gpu-node-3", "gpu_uuid": "GPU-seed-5e1f", "model": "H100-80GB", "namespace": "eai-inference",
			"pod": "seed-vllm-llama-70b-0", "deployment_id": "seed-vllm-llama-70b", "window_seconds": 15,
			"utilization": 0.82, "memory_used_gb": 61.2, "power_w": 512,
			"timestamp": end.Add(-time.Duration(k) * 15 * time.Second).Format(time.RFC3339),
		})
	}
	return samples
}
`

var importPath = regexp.MustCompile(`"([^"]+)"`)

// seedProgram writes the program the test runs: the README's imports, the imports the harness needs
// beyond them, and in main the supplied definitions, the seed's lines with <control-plane-url> replaced,
// and the serving. The seed's lines are not reformatted (the program is not gofmt'ed; Go does not mind).
func seedProgram(readmeImports, seed []string, baseURL string) string {
	var b strings.Builder
	b.WriteString("// Code generated by seed_test.go from sdks/go/README.md and sdks/seed/sdk-examples.txt. DO NOT EDIT.\n\npackage main\n\n")
	b.WriteString(strings.Join(readmeImports, "\n") + "\n\n")
	have := map[string]bool{}
	for _, l := range readmeImports {
		if m := importPath.FindStringSubmatch(l); m != nil {
			have[m[1]] = true
		}
	}
	var extra []string
	for _, p := range harnessImports {
		if !have[p] {
			extra = append(extra, "\t"+`"`+p+`"`)
		}
	}
	if len(extra) > 0 {
		b.WriteString("import (\n" + strings.Join(extra, "\n") + "\n)\n\n")
	}
	b.WriteString(harnessHead)
	for _, l := range seed {
		b.WriteString(strings.ReplaceAll(l, controlPlaneURL, baseURL) + "\n")
	}
	b.WriteString(harnessTail)
	return b.String()
}

// goEnv is the environment of the go commands the test runs: offline, the module's own go.mod.
func goEnv() []string {
	return append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOSUMDB=off")
}

func runGo(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = goEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestSeedSnippetMatchesSeed: the README's quick start is the seed's Go snippet, line for line and byte for
// byte, below its import declaration; and the seed has the calls this test checks.
func TestSeedSnippetMatchesSeed(t *testing.T) {
	seed := seedGoLines(t)
	_, statements := readmeQuickStart(t)
	if got, want := strings.Join(statements, "\n"), strings.Join(seed, "\n"); got != want {
		t.Fatalf("README.md's quick start differs from the seed's Go snippet (%s).\nREADME:\n%s\nseed:\n%s", seedFile, got, want)
	}
	text := strings.Join(seed, "\n")
	for _, want := range []string{controlPlaneURL, "samples", "llmHandler", "usage.NewEvent(\"acme\"", "gatewaymw.Config{"} {
		if !strings.Contains(text, want) {
			t.Errorf("the seed's Go snippet no longer holds %q: this test supplies or checks it", want)
		}
	}
}

// TestSeedSnippet runs the README's quick start, which is the seed's Go snippet verbatim, against the real
// server: a program made of the README's imports and the lines of sdks/seed/sdk-examples.txt (only
// <control-plane-url>, samples and llmHandler supplied), in a module set up with the README's `go mod edit`
// line, built with `go build` and run with EAI_API_KEY set, through a proxy that records every call. The
// gateway the snippet registers on http.DefaultServeMux is then called 51 times against a 25 EUR monthly
// budget of acme: 50 calls at 0.50 pass, the 51st is refused with 402 without running llmHandler, and the
// budget reconciles to the cent.
func TestSeedSnippet(t *testing.T) {
	ctx := context.Background()
	if _, err := admin.Tenants.Get(ctx, "acme"); err != nil {
		t.Fatalf("tenant acme must be registered first: %v", err)
	}
	seed := seedGoLines(t)
	imports, _ := readmeQuickStart(t)
	budget, err := admin.FinOps.CreateBudget(ctx, eai.BudgetCreate{TenantID: acme.ID, Name: "seed gateway",
		Limit: eai.Money{Amount: "25.00", Currency: "EUR"}, Enforce: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := admin.FinOps.DisableBudget(ctx, budget.ID, ""); err != nil {
			t.Errorf("disabling the seed's budget: %v", err)
		}
	}()

	proxy := eaitest.NewProxy(srv.URL)
	defer proxy.Close()
	program := seedProgram(imports, seed, proxy.URL)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the seed program: %v", err)
	}
	runGo(t, dir, goBin, "mod", "init", "seedrun")
	edit := readmeGoModEdit(t)
	edit[0] = goBin
	runGo(t, dir, edit...)
	runGo(t, dir, goBin, "build", "-o", "seed", ".")

	cmd := exec.Command(filepath.Join(dir, "seed"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EAI_API_KEY="+srv.AdminKey)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	fail := func(format string, args ...any) {
		t.Helper()
		_ = cmd.Process.Kill()
		t.Fatalf(format+"\nprogram stderr:\n%s\nprogram:\n%s", append(args, stderr.String(), program)...)
	}
	var gateway string
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "serving http://") {
			fail("the seed program said %q", l)
		}
		gateway = strings.TrimPrefix(l, "serving ")
	case <-time.After(60 * time.Second):
		fail("the seed program did not start serving")
	}

	// The snippet's gateway: 50 calls of 0.50 fit the 25 EUR budget, the 51st is refused.
	for i := 1; i <= 51; i++ {
		resp, err := http.Post(gateway+"/llm", "application/json", strings.NewReader(`{"prompt":"hello"}`))
		if err != nil {
			fail("call %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case i <= 50 && (resp.StatusCode != http.StatusOK || string(body) != "ok"):
			fail("call %d: %d %s, want 200 ok", i, resp.StatusCode, body)
		case i == 51:
			var env struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if resp.StatusCode != http.StatusPaymentRequired || json.Unmarshal(body, &env) != nil || env.Error.Code != eai.CodeBudgetExceeded {
				fail("call 51: %d %s, want 402 budget_exceeded", resp.StatusCode, body)
			}
		}
	}
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	var report []string
	for l := range lines {
		report = append(report, l)
	}
	select {
	case err := <-exited:
		if err != nil {
			fail("the seed program failed: %v (stdout %q)", err, report)
		}
	case <-time.After(60 * time.Second):
		fail("the seed program did not exit")
	}
	if len(report) != 1 || report[0] != "llm handler calls: 50" {
		t.Fatalf("the seed program reported %q, want llmHandler run 50 times (not for the refused call)", report)
	}

	// Every call of the snippet reached the server, in order, signed in to acme, and succeeded.
	var calls, events, reserves, commits []eaitest.Exchange
	for _, x := range proxy.Exchanges() {
		switch {
		case x.Path == "/v1/usage/events":
			events = append(events, x)
		case x.Path == "/v1/finops/reservations":
			reserves = append(reserves, x)
		case strings.HasPrefix(x.Path, "/v1/finops/reservations/"):
			commits = append(commits, x)
		default:
			calls = append(calls, x)
		}
	}
	want := []struct {
		method, path string
		status       int
	}{
		{"POST", "/v1/finops/gpu/samples", 200},
		{"GET", "/v1/finops/gpu/allocation", 200},
		{"POST", "/v1/finops/allocation-policies", 201},
		{"GET", "/v1/providers/catalog", 200},
	}
	if len(calls) != len(want) {
		t.Fatalf("the seed program made %d calls besides usage events and reservations, want %d: %+v", len(calls), len(want), calls)
	}
	for k, w := range want {
		g := calls[k]
		if g.Method != w.method || g.Path != w.path || g.Status != w.status || g.Tenant != "acme" {
			t.Errorf("call %d: got %s %s -> %d (tenant %q), want %s %s -> %d with X-EAI-Tenant acme",
				k, g.Method, g.Path, g.Status, g.Tenant, w.method, w.path, w.status)
		}
	}
	if q := calls[1].Query; q != "from=2026-10-01&to=2026-10-31" {
		t.Errorf("allocation query %q", q)
	}

	// The usage event: one request, for acme by slug (X-EAI-Tenant), no tenant_id in the body, stored.
	if len(events) != 1 || events[0].Method != "POST" || events[0].Status != 200 || events[0].Tenant != "acme" {
		t.Fatalf("usage event requests: %+v", events)
	}
	var sent struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal(events[0].Body, &sent); err != nil || len(sent.Events) != 1 {
		t.Fatalf("usage events body %s: %v", events[0].Body, err)
	}
	ev := sent.Events[0]
	model, _ := ev["model"].(map[string]any)
	units, _ := ev["units"].(map[string]any)
	if _, has := ev["tenant_id"]; has || ev["usage_type"] != "gpu_local" || ev["source"] != "worker" ||
		model["provider"] != "local" || model["name"] != "llama-70b-local" || units["gpu_seconds"] != "12.4" || units["energy_wh"] != "1.7" {
		t.Fatalf("the usage event sent: %s", events[0].Body)
	}
	var stored eai.IngestResult
	if err := json.Unmarshal(events[0].Answer, &stored); err != nil || stored.Accepted != 1 {
		t.Fatalf("the usage event's answer: %s %v", events[0].Answer, err)
	}

	// The gateway: 51 reservations for acme (50 granted, 1 refused), 50 commits; the budget reconciles.
	if len(reserves) != 51 || len(commits) != 50 {
		t.Fatalf("%d reservations and %d commits, want 51 and 50", len(reserves), len(commits))
	}
	for k, x := range reserves {
		wantStatus := http.StatusCreated
		if k == 50 {
			wantStatus = http.StatusPaymentRequired
		}
		var req eai.ReservationRequest
		if x.Method != "POST" || x.Status != wantStatus || x.Tenant != "acme" || json.Unmarshal(x.Body, &req) != nil ||
			req.Action != "llm.invoke" || req.Estimate != (eai.Estimate{Cost: "0.50", Tokens: 4000}) {
			t.Fatalf("reservation %d: %s %s -> %d (tenant %q) %s", k, x.Method, x.Path, x.Status, x.Tenant, x.Body)
		}
	}
	for k, x := range commits {
		if x.Method != "POST" || !strings.HasSuffix(x.Path, "/commit") || x.Status != http.StatusOK || x.Tenant != "acme" {
			t.Fatalf("commit %d: %s %s -> %d (tenant %q)", k, x.Method, x.Path, x.Status, x.Tenant)
		}
	}
	b, err := admin.FinOps.GetBudget(ctx, budget.ID)
	if err != nil || b.Current == nil {
		t.Fatalf("GetBudget: %+v %v", b, err)
	}
	cur := b.Current
	if !cur.Spent.Amount.Equal("25.00") || cur.Spent.Currency != "EUR" || !cur.Held.Amount.Equal("0") || !cur.Left.Amount.Equal("0") ||
		cur.SpentTokens.String() != "200000" {
		t.Fatalf("the budget after 50 calls of 0.50: spent %+v, held %+v, left %+v, tokens %s, want 25.00 EUR spent, 0 held, 0 left, 200000 tokens",
			cur.Spent, cur.Held, cur.Left, cur.SpentTokens)
	}

	// The snippet's other effects, read back through the API.
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
