package gatewaymw_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	eai "github.com/enterprise-ai/eai-go"
	"github.com/enterprise-ai/eai-go/gatewaymw"
	"github.com/enterprise-ai/eai-go/internal/eaitest"
)

var srv *eaitest.Server

func TestMain(m *testing.M) {
	var err error
	srv, err = eaitest.Start(map[string]string{"EAI_RATE_LIMIT_PER_KEY": "0"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FATAL: cannot start the eai-gpu server the tests need:", err)
		os.Exit(1)
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "server log (tail):\n", srv.LogTail(3000))
	}
	srv.Stop()
	os.Exit(code)
}

func client(t *testing.T, opts ...eai.ClientOption) *eai.Client {
	t.Helper()
	c, err := eai.NewClient(append([]eai.ClientOption{eai.WithBaseURL(srv.URL), eai.WithAPIKey(srv.AdminKey)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type envelope struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"request_id"`
	} `json:"error"`
}

type gateway struct {
	t     *testing.T
	url   string
	calls atomic.Int64
	mu    sync.Mutex
	errs  []error
}

// newGateway serves a handler under the middleware: ?mode=header gives the actual cost in the response
// headers, ?mode=set with SetActual, ?mode=500 answers 500, ?mode=panic panics, otherwise the estimate.
// Every answer names its reservation in X-Test-Reservation.
func newGateway(t *testing.T, c *eai.Client) *gateway {
	g := &gateway{t: t}
	mw := gatewaymw.New(gatewaymw.Config{
		Client:     c,
		ActionName: "llm.invoke",
		Estimate: func(r *http.Request) (eai.Estimate, error) {
			if r.URL.Query().Get("mode") == "bad-estimate" {
				return eai.Estimate{}, errors.New("no model named")
			}
			return eai.Estimate{Cost: "1.00", Tokens: 100}, nil
		},
		Tenant:       func(r *http.Request) string { return r.Header.Get("X-Customer") },
		DeploymentID: func(*http.Request) string { return "vllm-gw" },
		OnError: func(_ *http.Request, id string, err error) {
			g.mu.Lock()
			g.errs = append(g.errs, fmt.Errorf("%s: %w", id, err))
			g.mu.Unlock()
		},
	})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.calls.Add(1)
		res := gatewaymw.ReservationFrom(r.Context())
		if res == nil || res.Status != eai.ReservationHeld {
			t.Errorf("handler without a held reservation: %+v", res)
		}
		w.Header().Set("X-Test-Reservation", res.ID)
		switch r.URL.Query().Get("mode") {
		case "header":
			w.Header().Set(gatewaymw.HeaderActualCost, "0.75")
			w.Header().Set(gatewaymw.HeaderActualTokens, "75")
		case "set":
			if !gatewaymw.SetActual(r.Context(), "1.25", 125) {
				t.Error("SetActual: false")
			}
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "upstream failed")
			return
		case "panic":
			panic(http.ErrAbortHandler)
		}
		_, _ = io.WriteString(w, "ok")
	})
	s := httptest.NewServer(mw(h))
	t.Cleanup(s.Close)
	g.url = s.URL
	return g
}

type answer struct {
	status      int
	body        []byte
	reservation string
	header      http.Header
}

func (g *gateway) call(tenant, mode string) (*answer, error) {
	req, _ := http.NewRequest(http.MethodPost, g.url+"/v1/chat?mode="+mode, nil)
	if tenant != "" {
		req.Header.Set("X-Customer", tenant)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return &answer{resp.StatusCode, body, resp.Header.Get("X-Test-Reservation"), resp.Header}, nil
}

func (g *gateway) noErrors() {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.errs) > 0 {
		g.t.Fatalf("commit/release errors: %v", g.errs)
	}
}

func eq(t *testing.T, what string, got eai.Decimal, want string) {
	t.Helper()
	if !got.Equal(eai.Decimal(want)) {
		t.Fatalf("%s = %q, want %s", what, got, want)
	}
}

func TestGatewayMiddleware(t *testing.T) {
	ctx := context.Background()
	admin := client(t)
	tenant, err := admin.Tenants.Create(ctx, eai.TenantCreate{Slug: "gw-acme", Name: "Gateway Acme"})
	if err != nil {
		t.Fatal(err)
	}
	budget, err := admin.FinOps.CreateBudget(ctx, eai.BudgetCreate{
		TenantID: tenant.ID, Name: "gateway", Limit: eai.Money{Amount: "50.00", Currency: "USD"}, Enforce: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	key, err := admin.Auth.CreateAPIKey(ctx, eai.APIKeyCreate{Role: eai.RoleUsageReporter, Name: "gateway"})
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, client(t, eai.WithAPIKey(key.Key)))
	standing := func() *eai.BudgetCurrent {
		t.Helper()
		b, err := admin.FinOps.GetBudget(ctx, budget.ID)
		if err != nil || b.Current == nil {
			t.Fatalf("GetBudget: %+v %v", b, err)
		}
		return b.Current
	}

	// A 5xx and a panic release the hold (not committed): nothing spent, nothing held.
	a, err := g.call(tenant.Slug, "500")
	if err != nil || a.status != 500 || a.reservation == "" {
		t.Fatalf("500: %+v %v", a, err)
	}
	released := []string{a.reservation}
	if _, err := g.call(tenant.Slug, "panic"); err == nil {
		t.Fatal("a panicking handler answered")
	}
	if g.calls.Load() != 2 {
		t.Fatalf("handler calls %d", g.calls.Load())
	}
	cur := standing()
	eq(t, "spent after 500/panic", cur.Spent.Amount, "0")
	eq(t, "held after 500/panic", cur.Held.Amount, "0")
	for _, id := range released {
		r, err := admin.FinOps.GetReservation(ctx, id)
		if err != nil || r.Status != eai.ReservationReleased || r.UsageEventID != nil {
			t.Fatalf("after a 500: %+v %v", r, err)
		}
	}
	g.noErrors()
	g.calls.Store(0)

	// 50 calls fit: 20 at the estimate (1.00), 15 by header (0.75), 15 by SetActual (1.25): 50.00 in all.
	want := map[string]string{}
	for i := 0; i < 50; i++ {
		mode, cost := "", "1.00"
		switch {
		case i >= 20 && i%2 == 0:
			mode, cost = "header", "0.75"
		case i >= 20:
			mode, cost = "set", "1.25"
		}
		a, err := g.call(tenant.Slug, mode)
		if err != nil || a.status != 200 || string(a.body) != "ok" || a.reservation == "" {
			t.Fatalf("call %d (%s): %+v %v", i, mode, a, err)
		}
		if a.header.Get(gatewaymw.HeaderActualCost) != "" || a.header.Get(gatewaymw.HeaderActualTokens) != "" {
			t.Fatalf("call %d: the X-EAI-Actual-* headers reached the client: %v", i, a.header)
		}
		want[a.reservation] = cost
	}
	g.noErrors()
	if g.calls.Load() != 50 || len(want) != 50 {
		t.Fatalf("handler calls %d, reservations %d", g.calls.Load(), len(want))
	}

	// The 51st is refused with the server's 402 envelope, without the handler running.
	a, err = g.call(tenant.Slug, "")
	if err != nil || a.status != http.StatusPaymentRequired {
		t.Fatalf("51st: %+v %v", a, err)
	}
	var env envelope
	if err := json.Unmarshal(a.body, &env); err != nil || env.Error.Code != eai.CodeBudgetExceeded || env.Error.Message == "" || env.Error.RequestID == "" {
		t.Fatalf("51st envelope: %s %v", a.body, err)
	}
	if a.header.Get("Content-Type") != "application/json" || g.calls.Load() != 50 {
		t.Fatalf("51st: content type %q, handler calls %d", a.header.Get("Content-Type"), g.calls.Load())
	}

	// Every call was committed as a usage event of the tenant, with its actual cost.
	var sum eai.Decimal = "0"
	for id, cost := range want {
		r, err := admin.FinOps.GetReservation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != eai.ReservationCommitted || r.UsageEventID == nil || r.TenantID != tenant.ID || r.Actual == nil ||
			r.Action != "llm.invoke" || r.DeploymentID == nil || *r.DeploymentID != "vllm-gw" {
			t.Fatalf("reservation %s: %+v", id, r)
		}
		eq(t, "actual of "+id, r.Actual.Cost, cost)
		wantTokens := map[string]string{"1.00": "100", "0.75": "75", "1.25": "125"}[cost]
		if r.Actual.Tokens.String() != wantTokens {
			t.Fatalf("reservation %s: tokens %s, want %s", id, r.Actual.Tokens, wantTokens)
		}
		if sum, err = sum.Add(r.Actual.Cost); err != nil {
			t.Fatal(err)
		}
	}
	eq(t, "sum of actuals", sum, "50")
	cur = standing()
	eq(t, "spent", cur.Spent.Amount, "50")
	eq(t, "held", cur.Held.Amount, "0")
	eq(t, "left", cur.Left.Amount, "0")
	if cur.SpentTokens.String() != fmt.Sprint(20*100+15*75+15*125) {
		t.Fatalf("spent tokens %s", cur.SpentTokens)
	}
}

func TestGatewayMiddlewareFailures(t *testing.T) {
	// The control plane refuses the key: 503 envelope, handler not called.
	g := newGateway(t, client(t, eai.WithAPIKey("eai_live_this_key_does_not_exist_000000"), eai.WithMaxRetries(0)))
	a, err := g.call("", "")
	if err != nil || a.status != http.StatusServiceUnavailable {
		t.Fatalf("bad key: %+v %v", a, err)
	}
	var env envelope
	if err := json.Unmarshal(a.body, &env); err != nil || env.Error.Code != eai.CodeUnavailable {
		t.Fatalf("503 envelope: %s %v", a.body, err)
	}
	// The estimate fails: 422 envelope, handler not called.
	a, err = g.call("", "bad-estimate")
	if err != nil || a.status != http.StatusUnprocessableEntity {
		t.Fatalf("bad estimate: %+v %v", a, err)
	}
	if err := json.Unmarshal(a.body, &env); err != nil || env.Error.Code != eai.CodeValidation {
		t.Fatalf("422 envelope: %s %v", a.body, err)
	}
	if g.calls.Load() != 0 {
		t.Fatalf("handler called %d times", g.calls.Load())
	}
	if gatewaymw.SetActual(context.Background(), "1", 1) || gatewaymw.ReservationFrom(context.Background()) != nil {
		t.Fatal("SetActual/ReservationFrom outside the middleware")
	}
}

// TestGatewayMiddlewareMapEstimate: the configuration of the README's quick start (Action a func, Reserve a
// map of cost 0.50 without a currency) on a platform key signed in to the tenant by slug. A 25 EUR monthly
// budget takes 50 calls and refuses the 51st with 402 without running the handler; the reservations are
// held in the budget's currency and the budget reconciles to the cent: 25.00 spent, nothing held or left.
func TestGatewayMiddlewareMapEstimate(t *testing.T) {
	ctx := context.Background()
	admin := client(t)
	tenant, err := admin.Tenants.Create(ctx, eai.TenantCreate{Slug: "gw-map", Name: "Gateway map"})
	if err != nil {
		t.Fatal(err)
	}
	budget, err := admin.FinOps.CreateBudget(ctx, eai.BudgetCreate{
		TenantID: tenant.ID, Name: "monthly", Limit: eai.Money{Amount: "25.00", Currency: "EUR"}, Enforce: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	var mu sync.Mutex
	var failures []error
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if res := gatewaymw.ReservationFrom(r.Context()); res != nil {
			w.Header().Set("X-Test-Reservation", res.ID)
		}
		_, _ = io.WriteString(w, "ok")
	})
	mw := gatewaymw.New(gatewaymw.Config{
		Client:  client(t, eai.WithTenant(tenant.Slug)),
		Action:  func(r *http.Request) string { return "llm.invoke" },
		Reserve: func(r *http.Request) map[string]any { return map[string]any{"cost": "0.50", "tokens": 4000} },
		OnError: func(_ *http.Request, id string, err error) {
			mu.Lock()
			failures = append(failures, fmt.Errorf("%s: %w", id, err))
			mu.Unlock()
		},
	})
	s := httptest.NewServer(mw(handler))
	defer s.Close()
	g := &gateway{t: t, url: s.URL}

	var ids []string
	for i := 1; i <= 51; i++ {
		a, err := g.call("", "")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if i <= 50 {
			if a.status != http.StatusOK || string(a.body) != "ok" || a.reservation == "" {
				t.Fatalf("call %d: %d %s", i, a.status, a.body)
			}
			ids = append(ids, a.reservation)
			continue
		}
		var env envelope
		if a.status != http.StatusPaymentRequired || json.Unmarshal(a.body, &env) != nil || env.Error.Code != eai.CodeBudgetExceeded {
			t.Fatalf("call 51: %d %s, want 402 budget_exceeded", a.status, a.body)
		}
	}
	if n := calls.Load(); n != 50 {
		t.Fatalf("the handler ran %d times, want 50 (not for the refused 51st)", n)
	}
	mu.Lock()
	if len(failures) > 0 {
		t.Fatalf("commit errors: %v", failures)
	}
	mu.Unlock()
	for _, id := range ids {
		r, err := admin.FinOps.GetReservation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != eai.ReservationCommitted || r.TenantID != tenant.ID || r.Action != "llm.invoke" || r.Estimate.Currency != "EUR" ||
			r.Actual == nil || !r.Actual.Cost.Equal("0.50") || r.Actual.Tokens.String() != "4000" {
			t.Fatalf("reservation %s: %+v", id, r)
		}
	}
	b, err := admin.FinOps.GetBudget(ctx, budget.ID)
	if err != nil || b.Current == nil {
		t.Fatalf("GetBudget: %+v %v", b, err)
	}
	eq(t, "spent", b.Current.Spent.Amount, "25.00")
	eq(t, "held", b.Current.Held.Amount, "0")
	eq(t, "left", b.Current.Left.Amount, "0")
	if b.Current.Spent.Currency != "EUR" || b.Current.SpentTokens.String() != "200000" {
		t.Fatalf("spent %+v, tokens %s", b.Current.Spent, b.Current.SpentTokens)
	}
}

// TestGatewayMiddlewareEstimateMaps: what a Reserve map may hold, what answers 422 without running the
// handler (in the middleware, or refused by the control plane), and the rules New enforces.
func TestGatewayMiddlewareEstimateMaps(t *testing.T) {
	ctx := context.Background()
	admin := client(t)
	tenant, err := admin.Tenants.Create(ctx, eai.TenantCreate{Slug: "gw-maps", Name: "Gateway maps"})
	if err != nil {
		t.Fatal(err)
	}
	var estimate atomic.Value // map[string]any
	var action atomic.Value   // string
	var calls atomic.Int64
	mw := gatewaymw.New(gatewaymw.Config{
		Client:  client(t, eai.WithTenant(tenant.Slug)),
		Action:  func(*http.Request) string { return action.Load().(string) },
		Reserve: func(*http.Request) map[string]any { m, _ := estimate.Load().(map[string]any); return m },
	})
	s := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("X-Test-Reservation", gatewaymw.ReservationFrom(r.Context()).ID)
	})))
	defer s.Close()
	g := &gateway{t: t, url: s.URL}
	action.Store("llm.invoke")

	// Accepted forms: what encoding/json decodes (json.Number, float64 counts), integers, eai.Decimal.
	good := []struct {
		m              map[string]any
		cost, currency string
		tokens         string
	}{
		{map[string]any{"cost": "0.50"}, "0.50", "USD", "0"},
		{map[string]any{"cost": json.Number("1.25"), "tokens": float64(300), "currency": "EUR"}, "1.25", "EUR", "300"},
		{map[string]any{"cost": 2, "tokens": json.Number("7"), "currency": nil}, "2", "USD", "7"},
		{map[string]any{"cost": eai.Decimal("0.0001"), "tokens": "12"}, "0.0001", "USD", "12"},
	}
	for i, c := range good {
		estimate.Store(c.m)
		a, err := g.call("", "")
		if err != nil || a.status != http.StatusOK || a.reservation == "" {
			t.Fatalf("good %d %v: %+v %v", i, c.m, a, err)
		}
		r, err := admin.FinOps.GetReservation(ctx, a.reservation)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Estimate.Cost.Equal(eai.Decimal(c.cost)) || r.Estimate.Tokens.String() != c.tokens || r.Estimate.Currency != c.currency {
			t.Fatalf("good %d %v: reservation %+v", i, c.m, r)
		}
	}
	if n := calls.Load(); n != int64(len(good)) {
		t.Fatalf("handler calls %d", n)
	}

	// Refused: 422 validation_error, the handler not called.
	bad := []map[string]any{
		nil,
		{},
		{"tokens": 10},
		{"cost": 0.5},
		{"cost": "-1"},
		{"cost": "1e3"},
		{"cost": true},
		{"cost": "0.50", "tokens": -1},
		{"cost": "0.50", "tokens": 1.5},
		{"cost": "0.50", "tokens": "many"},
		{"cost": "0.50", "currency": "eur"},
		{"cost": "0.50", "token": 4000},
		{"cost": "2000000000000"}, // refused by the control plane (above its 10^12 bound): its 422, as is
	}
	calls.Store(0)
	for i, m := range bad {
		estimate.Store(m)
		a, err := g.call("", "")
		var env envelope
		if err != nil || a.status != http.StatusUnprocessableEntity || json.Unmarshal(a.body, &env) != nil ||
			env.Error.Code != eai.CodeValidation || env.Error.Message == "" {
			t.Fatalf("bad %d %v: %+v %v", i, m, a, err)
		}
	}
	estimate.Store(map[string]any{"cost": "0.50"})
	action.Store("")
	if a, err := g.call("", ""); err != nil || a.status != http.StatusUnprocessableEntity {
		t.Fatalf("no action: %+v %v", a, err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for refused estimates", n)
	}

	// New's rules: a client, exactly one action form, exactly one estimate form.
	c := client(t)
	act := func(*http.Request) string { return "a" }
	res := func(*http.Request) map[string]any { return map[string]any{"cost": "1"} }
	est := func(*http.Request) (eai.Estimate, error) { return eai.Estimate{Cost: "1"}, nil }
	for name, cfg := range map[string]gatewaymw.Config{
		"no client":         {Action: act, Reserve: res},
		"no action":         {Client: c, Reserve: res},
		"two actions":       {Client: c, Action: act, ActionName: "a", Reserve: res},
		"no estimate":       {Client: c, ActionName: "a"},
		"two estimates":     {Client: c, ActionName: "a", Reserve: res, Estimate: est},
		"all of them twice": {Client: c, Action: act, ActionName: "a", Reserve: res, Estimate: est},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%s) did not panic", name)
				}
			}()
			gatewaymw.New(cfg)
		}()
	}
}
