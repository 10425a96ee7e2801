package eai_test

// The one behaviour of the four SDKs: every case of contracts/v1/sdk/behaviour.json (read from the
// repository, never copied) run against the shared `eai-gpu serve` through one scripts/sdk/fault_proxy.py.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	eai "github.com/enterprise-ai/eai-go"
	"github.com/enterprise-ai/eai-go/internal/eaitest"
	"github.com/enterprise-ai/eai-go/usage"
)

type behaviourDoc struct {
	Defaults struct {
		TimeoutSeconds       float64 `json:"timeout_seconds"`
		MaxRetries           int     `json:"max_retries"`
		BackoffBaseSeconds   float64 `json:"backoff_base_seconds"`
		BackoffMaxSeconds    float64 `json:"backoff_max_seconds"`
		MaxRetryAfterSeconds float64 `json:"max_retry_after_seconds"`
		MaxBatchSize         int     `json:"max_batch_size"`
		FlushIntervalSeconds float64 `json:"flush_interval_seconds"`
		UsageMaxQueue        int     `json:"usage_max_queue"`
	} `json:"defaults"`
	Retried struct {
		Statuses   []int    `json:"statuses"`
		CodesOn409 []string `json:"codes_on_409"`
	} `json:"retried"`
	Headers          map[string]string `json:"headers"`
	ErrorKinds       map[string]string `json:"error_kinds"`
	ErrorKindParents map[string]string `json:"error_kind_parents"`
	Cases            []behaviourCase   `json:"cases"`
	Calls            map[string]json.RawMessage
}

type behaviourCase struct {
	Name    string            `json:"name"`
	Call    string            `json:"call"`
	Client  map[string]any    `json:"client"`
	Request map[string]any    `json:"request"`
	Faults  []json.RawMessage `json:"faults"`
	Expect  struct {
		Outcome                string            `json:"outcome"`
		Kind                   string            `json:"kind"`
		Status                 int               `json:"status"`
		Code                   string            `json:"code"`
		Attempts               int               `json:"attempts"`
		MinGapSeconds          []float64         `json:"min_gap_seconds"`
		SameIdempotencyKey     bool              `json:"same_idempotency_key"`
		ResourcesCreated       *int              `json:"resources_created"`
		RequestIDOnResult      bool              `json:"request_id_on_result"`
		Header                 map[string]string `json:"header"`
		BatchSizes             []int             `json:"batch_sizes"`
		DistinctIdempotencyKey *int              `json:"distinct_idempotency_keys"`
		Accepted               *int              `json:"accepted"`
	} `json:"expect"`
}

type callSpec struct {
	Body         json.RawMessage `json:"body"`
	Record       json.RawMessage `json:"record"`
	CountWith    string          `json:"count_with"`
	DefaultCount int             `json:"default_count"`
}

func loadBehaviour(t *testing.T) *behaviourDoc {
	t.Helper()
	path := filepath.Join(eaitest.RepoRoot(), "contracts", "v1", "sdk", "behaviour.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	var doc behaviourDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var whole struct {
		Calls map[string]json.RawMessage `json:"calls"`
	}
	if err := json.Unmarshal(raw, &whole); err != nil {
		t.Fatal(err)
	}
	doc.Calls = whole.Calls
	if len(doc.Cases) == 0 {
		t.Fatalf("%s has no cases", path)
	}
	return &doc
}

// errorKinds is the one table kind -> the SDK's error class.
var errorKinds = map[string]func(error) bool{
	"authentication":         isClass[*eai.AuthenticationError],
	"permission_denied":      isClass[*eai.PermissionDeniedError],
	"tenant_required":        isClass[*eai.TenantRequiredError],
	"not_found":              isClass[*eai.NotFoundError],
	"method_not_allowed":     isClass[*eai.MethodNotAllowedError],
	"payload_too_large":      isClass[*eai.PayloadTooLargeError],
	"conflict":               isClass[*eai.ConflictError],
	"idempotency_key_reused": isClass[*eai.IdempotencyKeyReusedError],
	"validation":             isClass[*eai.ValidationError],
	"rate_limit":             isClass[*eai.RateLimitError],
	"internal_server":        isClass[*eai.InternalServerError],
	"service_unavailable":    isClass[*eai.ServiceUnavailableError],
	"budget_exceeded":        isClass[*eai.BudgetExceededError],
	"timeout":                isClass[*eai.TimeoutError],
	// the base class: an *APIError that is none of the classes above
	"api_error": func(err error) bool { _, ok := err.(*eai.APIError); return ok },
}

func isClass[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// kindsOf names every kind of the table err matches.
func kindsOf(err error) []string {
	var out []string
	for k, is := range errorKinds {
		if is(err) {
			out = append(out, k)
		}
	}
	return out
}

var (
	behaviourOnce  sync.Once
	behaviourProxy *eaitest.FaultProxy
	behaviourErr   error
	behaviourTen   *eai.Tenant
)

// sharedProxy is the one fault proxy of the suite, in front of the shared server (stopped by TestMain).
func sharedProxy(t *testing.T) *eaitest.FaultProxy {
	t.Helper()
	behaviourOnce.Do(func() {
		behaviourProxy, behaviourErr = eaitest.StartFaultProxy(srv.URL)
		if behaviourErr != nil {
			return
		}
		stopAtExit = append(stopAtExit, behaviourProxy.Stop)
		behaviourTen, behaviourErr = admin.Tenants.Create(context.Background(),
			map[string]any{"slug": "sdk-cases-" + caseUnique(), "name": "SDK cases"})
	})
	if behaviourErr != nil {
		t.Fatalf("fault proxy: %v", behaviourErr)
	}
	return behaviourProxy
}

func caseUnique() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

func TestBehaviourDefaults(t *testing.T) {
	doc := loadBehaviour(t)
	d := doc.Defaults
	c := newClient(t)
	got := c.Config()
	secs := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	want := eai.Config{
		Timeout: secs(d.TimeoutSeconds), MaxRetries: d.MaxRetries, RetryBaseDelay: secs(d.BackoffBaseSeconds),
		RetryMaxDelay: secs(d.BackoffMaxSeconds), MaxRetryAfter: secs(d.MaxRetryAfterSeconds), MaxBatchSize: d.MaxBatchSize,
	}
	if got != want {
		t.Errorf("client defaults %+v, behaviour.json %+v", got, want)
	}
	if usage.DefaultFlushInterval != secs(d.FlushIntervalSeconds) || usage.DefaultBufferSize != d.UsageMaxQueue {
		t.Errorf("usage emitter defaults flush %v queue %d, behaviour.json %v s, %d", usage.DefaultFlushInterval,
			usage.DefaultBufferSize, d.FlushIntervalSeconds, d.UsageMaxQueue)
	}
	if ua := c.UserAgent(); !strings.HasPrefix(ua, doc.Headers["user_agent_prefix"]) {
		t.Errorf("User-Agent %q does not start with %q", ua, doc.Headers["user_agent_prefix"])
	}
}

// TestBehaviourErrorKinds answers every code of error_kinds through the proxy and checks its class (and its
// parent's, error_kind_parents).
func TestBehaviourErrorKinds(t *testing.T) {
	doc := loadBehaviour(t)
	proxy := sharedProxy(t)
	c := newClient(t, eai.WithBaseURL(proxy.URL), eai.WithMaxRetries(0))
	for code, kind := range doc.ErrorKinds {
		is, ok := errorKinds[kind]
		if !ok {
			t.Errorf("kind %q of code %q has no class in the SDK's table", kind, code)
			continue
		}
		fault, _ := json.Marshal(map[string]any{"status": 400, "code": code})
		if err := proxy.Queue([]json.RawMessage{fault}); err != nil {
			t.Fatal(err)
		}
		_, err := c.Tenants.List(context.Background())
		if !is(err) {
			t.Errorf("code %s: %T %v is not kind %s (kinds %v)", code, err, err, kind, kindsOf(err))
		}
		if parent := doc.ErrorKindParents[kind]; parent != "" && !errorKinds[parent](err) {
			t.Errorf("code %s: %T is not also kind %s", code, err, parent)
		}
		var apiErr *eai.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != code || apiErr.Status != 400 || errorKinds["api_error"](err) {
			t.Errorf("code %s: %#v", code, err)
		}
	}
}

func TestBehaviour(t *testing.T) {
	doc := loadBehaviour(t)
	proxy := sharedProxy(t)
	for _, bc := range doc.Cases {
		bc := bc
		t.Run(bc.Name, func(t *testing.T) { runBehaviourCase(t, doc, proxy, bc) })
	}
}

// fill replaces the placeholders of a call's template ({unique}, {tenant}, {i}, {uuid}, {now}).
func fill(t *testing.T, tmpl json.RawMessage, u string, i int) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(tmpl, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			x = strings.ReplaceAll(x, "{unique}", u)
			x = strings.ReplaceAll(x, "{tenant}", behaviourTen.ID)
			x = strings.ReplaceAll(x, "{i}", fmt.Sprint(i))
			x = strings.ReplaceAll(x, "{uuid}", eai.NewUUID())
			x = strings.ReplaceAll(x, "{now}", eai.FormatTimestamp(time.Now()))
			return x
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for k, e := range x {
				x[k] = walk(e)
			}
		}
		return v
	}
	return walk(v)
}

// countAt counts the items a list operation answers, asked directly at the server (not through the proxy).
func countAt(t *testing.T, op string) int {
	t.Helper()
	paths := map[string]string{}
	for _, o := range eai.Operations() {
		paths[o.ID] = o.Path
	}
	path, ok := paths[op]
	if !ok {
		t.Fatalf("count_with %s: no such operation in the SDK", op)
	}
	var out struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := admin.Do(context.Background(), "GET", path, nil, &out); err != nil {
		t.Fatalf("counting with %s: %v", op, err)
	}
	return len(out.Items)
}

func runBehaviourCase(t *testing.T, doc *behaviourDoc, proxy *eaitest.FaultProxy, bc behaviourCase) {
	ctx := context.Background()
	var spec callSpec
	if raw, ok := doc.Calls[bc.Call]; !ok || json.Unmarshal(raw, &spec) != nil {
		t.Fatalf("call %s is not described in behaviour.json's calls", bc.Call)
	}
	u := caseUnique()

	// The case's client, through the proxy; a logger that must see each attempt.
	var logged strings.Builder
	var logMu sync.Mutex
	opts := []eai.ClientOption{eai.WithBaseURL(proxy.URL), eai.WithAPIKey(srv.AdminKey),
		eai.WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, &slog.HandlerOptions{Level: slog.LevelDebug})))}
	for name, v := range bc.Client {
		f, ok := v.(float64)
		if !ok {
			t.Fatalf("client option %s: %v is not a number", name, v)
		}
		d := time.Duration(f * float64(time.Second))
		switch name {
		case "timeout_seconds":
			opts = append(opts, eai.WithTimeout(d))
		case "max_retries":
			opts = append(opts, eai.WithMaxRetries(int(f)))
		case "max_batch_size":
			opts = append(opts, eai.WithMaxBatchSize(int(f)))
		case "max_retry_after_seconds":
			opts = append(opts, eai.WithMaxRetryAfter(d))
		default:
			t.Fatalf("client option %s is unknown to this suite", name)
		}
	}
	client, err := eai.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	var resp eai.Response
	reqOpts := []eai.RequestOption{eai.WithResponse(&resp)}
	count := spec.DefaultCount
	for name, v := range bc.Request {
		switch name {
		case "traceparent":
			reqOpts = append(reqOpts, eai.WithTraceparent(v.(string)))
		case "idempotency_key":
			reqOpts = append(reqOpts, eai.WithIdempotencyKey(v.(string)))
		case "samples", "events":
			count = int(v.(float64))
		default:
			t.Fatalf("request option %s is unknown to this suite", name)
		}
	}

	before := 0
	if spec.CountWith != "" {
		before = countAt(t, spec.CountWith)
	}
	if err := proxy.Queue(bc.Faults); err != nil {
		t.Fatal(err)
	}

	var callErr error
	var ingest *eai.IngestResult
	body := func() any { return fill(t, spec.Body, u, 0) }
	records := func() []any {
		out := make([]any, count)
		for i := range out {
			out[i] = fill(t, spec.Record, u, i)
		}
		return out
	}
	switch bc.Call {
	case "listTenants":
		_, callErr = client.Tenants.List(ctx, reqOpts...)
	case "createTenant":
		_, callErr = client.Tenants.Create(ctx, body(), reqOpts...)
	case "createAllocationPolicy":
		_, callErr = client.FinOps.CreateAllocationPolicy(ctx, body(), reqOpts...)
	case "createBudget":
		_, callErr = client.FinOps.CreateBudget(ctx, body(), reqOpts...)
	case "createApiKey":
		_, callErr = client.Auth.CreateAPIKey(ctx, body(), reqOpts...)
	case "ingestGpuSamples":
		ingest, callErr = client.FinOps.GpuSamples(ctx, map[string]any{"samples": records()}, reqOpts...)
	case "ingestUsageEvents":
		// The events name no tenant: the platform key names the suite's tenant.
		ingest, callErr = client.Usage.Events(ctx, map[string]any{"events": records()},
			append(reqOpts, eai.WithTenant(behaviourTen.ID))...)
	default:
		t.Fatalf("call %s is unknown to this suite", bc.Call)
	}

	entries, left, err := proxy.Log()
	if err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d faults were never met", left)
	}
	ex := bc.Expect
	switch ex.Outcome {
	case "ok":
		if callErr != nil {
			t.Fatalf("want ok, got %T: %v", callErr, callErr)
		}
	case "error":
		if callErr == nil {
			t.Fatalf("want an error of kind %s, got ok", ex.Kind)
		}
		is, ok := errorKinds[ex.Kind]
		if !ok {
			t.Fatalf("kind %s has no class in the SDK's table", ex.Kind)
		}
		if !is(callErr) {
			t.Errorf("want kind %s, got %T (kinds %v): %v", ex.Kind, callErr, kindsOf(callErr), callErr)
		}
		var apiErr *eai.APIError
		if ex.Status != 0 {
			if !errors.As(callErr, &apiErr) || apiErr.Status != ex.Status {
				t.Errorf("want status %d, got %v", ex.Status, callErr)
			}
		}
		if apiErr != nil {
			if ex.Code != "" && apiErr.Code != ex.Code {
				t.Errorf("want code %s, got %q", ex.Code, apiErr.Code)
			}
			// The base class keeps the whole answer: status, code, message, request id, body.
			if len(apiErr.Body) == 0 || apiErr.RequestID == "" || apiErr.Message == "" {
				t.Errorf("the error lost its answer: %#v", apiErr)
			}
			if ex.Kind == "api_error" && ex.Code == "" && !strings.Contains(string(apiErr.Body), "<html>") {
				t.Errorf("the HTML body was not kept: %q", apiErr.Body)
			}
		}
	default:
		t.Fatalf("outcome %q", ex.Outcome)
	}

	if ex.Attempts != 0 && len(entries) != ex.Attempts {
		t.Errorf("the proxy saw %d attempts, want %d: %+v", len(entries), ex.Attempts, entries)
	}
	for i, min := range ex.MinGapSeconds {
		if i+1 >= len(entries) {
			t.Errorf("no attempt %d to measure a gap of %v s", i+2, min)
			continue
		}
		if gap := entries[i+1].At - entries[i].At; gap < min {
			t.Errorf("gap %d was %.3f s, want at least %v s", i+1, gap, min)
		}
	}
	keys := map[string]bool{}
	for _, e := range entries {
		if e.Method != "GET" && e.Headers["idempotency-key"] == "" {
			t.Errorf("%s %s carried no Idempotency-Key", e.Method, e.Path)
		}
		keys[e.Headers["idempotency-key"]] = true
	}
	if ex.SameIdempotencyKey && (len(keys) != 1 || keys[""]) {
		t.Errorf("want one idempotency key on every attempt, got %v", keys)
	}
	if ex.DistinctIdempotencyKey != nil && len(keys) != *ex.DistinctIdempotencyKey {
		t.Errorf("want %d distinct idempotency keys, got %v", *ex.DistinctIdempotencyKey, keys)
	}
	for name, want := range ex.Header {
		for _, e := range entries {
			if got := e.Headers[strings.ToLower(name)]; got != want {
				t.Errorf("header %s: %q, want %q", name, got, want)
			}
		}
	}
	if ex.BatchSizes != nil {
		var got []int
		for _, e := range entries {
			if e.Records == nil {
				got = append(got, -1)
			} else {
				got = append(got, *e.Records)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(ex.BatchSizes) {
			t.Errorf("batch sizes %v, want %v", got, ex.BatchSizes)
		}
	}
	if ex.Accepted != nil && (ingest == nil || ingest.Accepted != *ex.Accepted) {
		t.Errorf("accepted %+v, want %d", ingest, *ex.Accepted)
	}
	if ex.ResourcesCreated != nil {
		if spec.CountWith != "" {
			if after := countAt(t, spec.CountWith); after-before != *ex.ResourcesCreated {
				t.Errorf("%d resources made (%d -> %d), want %d", after-before, before, after, *ex.ResourcesCreated)
			}
		} else if ingest == nil || ingest.Accepted != count*(*ex.ResourcesCreated) || ingest.Duplicates != 0 {
			// An ingest replayed by the server answers its first answer; one it executed again answers the
			// records as duplicates.
			t.Errorf("ingest of %d records answered %+v: not counted once", count, ingest)
		}
	}
	if ex.RequestIDOnResult && resp.RequestID == "" {
		t.Errorf("no request id on the result: %+v", resp)
	}
	if ex.Outcome == "ok" && (resp.StatusCode < 200 || resp.StatusCode > 299 || resp.RequestID == "") {
		t.Errorf("the response holder was not filled: %+v", resp)
	}
	// The logger saw every attempt, without the key.
	logMu.Lock()
	text := logged.String()
	logMu.Unlock()
	if n := strings.Count(text, "attempt="); n != len(entries) {
		t.Errorf("logged %d attempts, the proxy saw %d:\n%s", n, len(entries), text)
	}
	if strings.Contains(text, srv.AdminKey) {
		t.Errorf("the log holds the API key:\n%s", text)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestRawRequest: the escape hatch (Client.Do) has the same auth, idempotency key, retries, headers and
// errors as the typed methods.
func TestRawRequest(t *testing.T) {
	proxy := sharedProxy(t)
	c := newClient(t, eai.WithBaseURL(proxy.URL))
	fault, _ := json.Marshal(map[string]any{"status": 503, "code": "unavailable", "retry_after": "0"})
	if err := proxy.Queue([]json.RawMessage{fault}); err != nil {
		t.Fatal(err)
	}
	slug := "raw-" + caseUnique()
	var out map[string]any
	var resp eai.Response
	err := c.Do(context.Background(), "POST", "/v1/tenants", map[string]any{"slug": slug, "name": "Raw"}, &out,
		eai.WithHeader("X-Extra", "yes"), eai.WithResponse(&resp))
	if err != nil || out["slug"] != slug || resp.RequestID == "" {
		t.Fatalf("%v %v %+v", err, out, resp)
	}
	entries, _, err := proxy.Log()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Headers["idempotency-key"] == "" ||
		entries[0].Headers["idempotency-key"] != entries[1].Headers["idempotency-key"] ||
		entries[1].Headers["idempotency-key"] != resp.IdempotencyKey || entries[1].Headers["x-extra"] != "yes" ||
		entries[1].Headers["authorization"] != "Bearer "+srv.AdminKey {
		t.Fatalf("%+v", entries)
	}
	// An error answer of the escape hatch is classified like any other.
	if err := proxy.Queue(nil); err != nil {
		t.Fatal(err)
	}
	err = c.Do(context.Background(), "GET", "/v1/tenants/no-such-tenant-"+caseUnique(), nil, &out)
	var nf *eai.NotFoundError
	if !errors.As(err, &nf) || nf.Status != 404 {
		t.Fatalf("%T %v", err, err)
	}
}
