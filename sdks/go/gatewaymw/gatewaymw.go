// Package gatewaymw is a net/http middleware that makes every request of a gateway (an LLM proxy, an
// inference front end) pay for itself against the tenant's eai-gpu budgets:
//
//  1. before the handler runs, it reserves the request's estimate (POST /v1/finops/reservations);
//  2. a refusal (402 budget_exceeded) is answered 402 with the server's error envelope, and the handler is
//     NOT called;
//  3. after the handler, it commits the reservation with the actual cost (a usage event of the tenant), or
//     releases it when the handler panicked (then re-panics) or answered a 5xx.
//
// The actual cost, in order of precedence: what the handler gave SetActual(r.Context(), cost, tokens); else
// the response headers X-EAI-Actual-Cost (a decimal) and X-EAI-Actual-Tokens (an integer, default 0); else
// the estimate. The X-EAI-Actual-* headers are removed from the response the client receives (when the
// handler sets them before its first Write or WriteHeader, as net/http requires of any header).
//
// A minimal configuration:
//
//	http.Handle("/llm", gatewaymw.New(gatewaymw.Config{Client: client,
//		Action:  func(r *http.Request) string { return "llm.invoke" },
//		Reserve: func(r *http.Request) map[string]any { return map[string]any{"cost": "0.50", "tokens": 4000} },
//	})(llmHandler))
//
// Other failures: an estimate the middleware cannot read (a Config.Reserve map without a decimal "cost", an
// error of Config.Estimate), no action (Config.Action answered ""), or an estimate the control plane refuses
// as invalid is answered 422 `validation_error`; a reservation that fails for another reason than a budget
// (the control plane unreachable, a bad key, a 5xx) is answered 503 `unavailable` (fail closed), each in
// the API's error envelope
// {"error": {"code", "message", "message_i18n", "details", "request_id"}}, without calling the handler.
// A commit or release that fails after the handler ran is given to Config.OnError (the client has its
// answer already); an unreleased hold frees itself when it expires (ReservationRequest.TTLSeconds).
//
// The commit or release is done synchronously, before the handler's response is completed, with a context
// that is not cancelled when the client goes away.
package gatewaymw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	eai "github.com/enterprise-ai/eai-go"
)

// Response headers a handler may set to give the actual cost and tokens of its request; the middleware
// reads and removes them.
const (
	HeaderActualCost   = "X-EAI-Actual-Cost"
	HeaderActualTokens = "X-EAI-Actual-Tokens"
)

// Config configures New. Client, an action (Action or ActionName) and an estimate (Reserve or Estimate) are
// required; setting both forms of the action, or of the estimate, is a mistake New panics on.
type Config struct {
	// Client is the eai-gpu client: a usage_reporter or platform_admin key naming the tenant (with
	// eai.WithTenant on the client, or per request with Tenant), or a tenant's key.
	Client *eai.Client
	// Action returns the request's action, the usage type of the committed event, e.g.
	// func(*http.Request) string { return "llm.invoke" }. An empty answer is a 422 without calling the
	// handler. Set Action or ActionName, not both.
	Action func(*http.Request) string
	// ActionName is the action of every request: the fixed form of Action.
	ActionName string
	// Reserve returns the request's estimate as a map, the JSON object POST /v1/finops/reservations takes
	// as "estimate": "cost" (required: a decimal string such as "0.50", an eai.Decimal, an integer or a
	// json.Number; never a float, money is exact), "tokens" (optional: an integer, or a float64 without a
	// fraction as encoding/json decodes numbers) and "currency" (optional: an ISO 4217 code; by default the
	// one currency of the tenant's budgets). A nil map, another key, or a value of the wrong kind is
	// answered 422 without calling the handler. Set Reserve or Estimate, not both.
	Reserve func(*http.Request) map[string]any
	// Estimate is the typed form of Reserve: it returns the request's estimate, or an error answered 422
	// without calling the handler.
	Estimate func(*http.Request) (eai.Estimate, error)
	// Tenant optionally names the request's tenant (slug or id, sent as X-EAI-Tenant); "" or nil: the
	// client's.
	Tenant func(*http.Request) string
	// DeploymentID optionally names the request's deployment.
	DeploymentID func(*http.Request) string
	// TTLSeconds is how long a hold lasts (0: the server's default, 300 s).
	TTLSeconds int
	// OnError, optional, receives the errors of commits and releases after the handler ran (and of
	// unparsable X-EAI-Actual-* headers, for which the estimate is committed).
	OnError func(r *http.Request, reservationID string, err error)
}

type ctxKey struct{}

type state struct {
	mu          sync.Mutex
	reservation *eai.Reservation
	actual      *eai.Actual
}

// SetActual records, from inside the handler, what the request actually cost (in the estimate's currency)
// and how many tokens it used; it takes precedence over the X-EAI-Actual-* headers. It reports false when
// ctx is not a request's context under the middleware.
func SetActual(ctx context.Context, cost eai.Decimal, tokens int64) bool {
	s, _ := ctx.Value(ctxKey{}).(*state)
	if s == nil {
		return false
	}
	s.mu.Lock()
	s.actual = &eai.Actual{Cost: cost, Tokens: tokens}
	s.mu.Unlock()
	return true
}

// ReservationFrom returns the request's reservation (held), or nil outside the middleware.
func ReservationFrom(ctx context.Context) *eai.Reservation {
	s, _ := ctx.Value(ctxKey{}).(*state)
	if s == nil {
		return nil
	}
	return s.reservation
}

// New returns the middleware. It panics when the configuration is incomplete or ambiguous: no Client; not
// exactly one of Action and ActionName; not exactly one of Reserve and Estimate.
func New(cfg Config) func(http.Handler) http.Handler {
	switch {
	case cfg.Client == nil:
		panic("gatewaymw.New: Config.Client is required")
	case cfg.Action == nil && cfg.ActionName == "":
		panic("gatewaymw.New: an action is required: set Config.Action (a func) or Config.ActionName")
	case cfg.Action != nil && cfg.ActionName != "":
		panic("gatewaymw.New: set Config.Action or Config.ActionName, not both")
	case cfg.Reserve == nil && cfg.Estimate == nil:
		panic("gatewaymw.New: an estimate is required: set Config.Reserve (a map) or Config.Estimate (typed)")
	case cfg.Reserve != nil && cfg.Estimate != nil:
		panic("gatewaymw.New: set Config.Reserve or Config.Estimate, not both")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serve(cfg, next, w, r)
		})
	}
}

// estimate returns the request's estimate, from Config.Reserve or Config.Estimate.
func (cfg *Config) estimate(r *http.Request) (eai.Estimate, error) {
	if cfg.Estimate != nil {
		return cfg.Estimate(r)
	}
	return estimateFromMap(cfg.Reserve(r))
}

// action returns the request's action, from Config.Action or Config.ActionName.
func (cfg *Config) action(r *http.Request) string {
	if cfg.Action != nil {
		return cfg.Action(r)
	}
	return cfg.ActionName
}

var currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)

// estimateFromMap reads an estimate given as a map (Config.Reserve): "cost", "tokens", "currency".
func estimateFromMap(m map[string]any) (eai.Estimate, error) {
	if m == nil {
		return eai.Estimate{}, errors.New(`no estimate (Config.Reserve returned nil; want at least {"cost": "0.50"})`)
	}
	var unknown []string
	for k := range m {
		if k != "cost" && k != "tokens" && k != "currency" {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return eai.Estimate{}, fmt.Errorf("unknown estimate key(s) %s (an estimate has cost, tokens and currency)", strings.Join(unknown, ", "))
	}
	var est eai.Estimate
	cost, ok := m["cost"]
	if !ok || cost == nil {
		return eai.Estimate{}, errors.New(`the estimate has no "cost"`)
	}
	c, err := mapCost(cost)
	if err != nil {
		return eai.Estimate{}, fmt.Errorf("estimate cost: %w", err)
	}
	est.Cost = c
	if v, ok := m["tokens"]; ok && v != nil {
		n, err := mapTokens(v)
		if err != nil {
			return eai.Estimate{}, fmt.Errorf("estimate tokens: %w", err)
		}
		est.Tokens = n
	}
	if v, ok := m["currency"]; ok && v != nil {
		cur, isString := v.(string)
		if !isString || !currencyPattern.MatchString(cur) {
			return eai.Estimate{}, fmt.Errorf("estimate currency: %v is not an ISO 4217 code such as \"EUR\"", v)
		}
		est.Currency = cur
	}
	return est, nil
}

// mapCost reads a cost: exact decimals only, at least 0.
func mapCost(v any) (eai.Decimal, error) {
	var text string
	switch x := v.(type) {
	case string:
		text = strings.TrimSpace(x)
	case eai.Decimal:
		text = string(x)
	case json.Number:
		text = x.String()
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		text = fmt.Sprint(x)
	case float32, float64:
		return "", fmt.Errorf("%v is a float: money must be exact, give it as a decimal string (\"0.50\")", x)
	default:
		return "", fmt.Errorf("%v (%T) is not a decimal", v, v)
	}
	d, err := eai.ParseDecimal(text)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(string(d), "-") {
		return "", fmt.Errorf("%s is negative", d)
	}
	return d, nil
}

// mapTokens reads a token count: a non-negative integer.
func mapTokens(v any) (int64, error) {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int8:
		n = int64(x)
	case int16:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case uint, uint8, uint16, uint32, uint64:
		u, err := strconv.ParseUint(fmt.Sprint(x), 10, 63)
		if err != nil {
			return 0, fmt.Errorf("%v is too large", x)
		}
		n = int64(u)
	case float64:
		if x != math.Trunc(x) || x < 0 || x > 1<<53 {
			return 0, fmt.Errorf("%v is not a count", x)
		}
		n = int64(x)
	case json.Number:
		i, err := x.Int64()
		if err != nil {
			return 0, fmt.Errorf("%s is not a count", x)
		}
		n = i
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a count", x)
		}
		n = i
	default:
		return 0, fmt.Errorf("%v (%T) is not a count", v, v)
	}
	if n < 0 {
		return 0, fmt.Errorf("%d is negative", n)
	}
	return n, nil
}

func serve(cfg Config, next http.Handler, w http.ResponseWriter, r *http.Request) {
	est, err := cfg.estimate(r)
	if err != nil {
		writeEnvelope(w, http.StatusUnprocessableEntity, eai.CodeValidation,
			"The request's cost could not be estimated: "+err.Error(), "")
		return
	}
	action := cfg.action(r)
	if action == "" {
		writeEnvelope(w, http.StatusUnprocessableEntity, eai.CodeValidation,
			"The request has no action to reserve for (Config.Action answered \"\").", "")
		return
	}
	var opts []eai.RequestOption
	if cfg.Tenant != nil {
		if t := cfg.Tenant(r); t != "" {
			opts = append(opts, eai.WithTenant(t))
		}
	}
	req := eai.ReservationRequest{Action: action, Estimate: est, TTLSeconds: cfg.TTLSeconds}
	if cfg.DeploymentID != nil {
		req.DeploymentID = cfg.DeploymentID(r)
	}
	res, err := cfg.Client.FinOps.Reserve(r.Context(), req, opts...)
	if err != nil {
		var apiErr *eai.APIError
		if errors.As(err, &apiErr) && (errors.Is(err, eai.ErrBudgetExceeded) || errors.Is(err, eai.ErrValidation)) {
			// Refused for the budget (402), or the estimate refused as invalid (422): the server's answer.
			status := http.StatusPaymentRequired
			if errors.Is(err, eai.ErrValidation) {
				status = http.StatusUnprocessableEntity
			}
			if json.Valid(apiErr.Body) && len(apiErr.Body) > 0 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = w.Write(apiErr.Body)
				return
			}
			writeEnvelope(w, status, apiErr.Code, apiErr.Message, apiErr.RequestID)
			return
		}
		rid := ""
		if errors.As(err, &apiErr) {
			rid = apiErr.RequestID
		}
		writeEnvelope(w, http.StatusServiceUnavailable, eai.CodeUnavailable,
			"The budget check is unavailable; try again later.", rid)
		return
	}

	st := &state{reservation: res}
	ctx := context.WithValue(r.Context(), ctxKey{}, st)
	rw := &writer{ResponseWriter: w}
	after := context.WithoutCancel(r.Context())
	report := func(err error) {
		if err != nil && cfg.OnError != nil {
			cfg.OnError(r, res.ID, err)
		}
	}

	panicked := true
	defer func() {
		if panicked {
			_, err := cfg.Client.FinOps.ReleaseReservation(after, res.ID, opts...)
			report(err)
			// Nothing was recovered: the panic goes on once this deferred call returns.
		}
	}()
	next.ServeHTTP(rw, r.WithContext(ctx))
	panicked = false

	rw.capture() // a handler that never wrote: the implicit 200 with its headers
	if rw.status >= 500 {
		_, err := cfg.Client.FinOps.ReleaseReservation(after, res.ID, opts...)
		report(err)
		return
	}
	actual := eai.Actual{Cost: est.Cost, Tokens: est.Tokens}
	st.mu.Lock()
	set := st.actual
	st.mu.Unlock()
	switch {
	case set != nil:
		actual = *set
	case rw.cost != "":
		a, err := parseActual(rw.cost, rw.tokens)
		if err != nil {
			report(err)
		} else {
			actual = a
		}
	}
	_, err = cfg.Client.FinOps.CommitReservation(after, res.ID, actual, opts...)
	report(err)
}

func parseActual(cost, tokens string) (eai.Actual, error) {
	c, err := eai.ParseDecimal(strings.TrimSpace(cost))
	if err != nil {
		return eai.Actual{}, fmt.Errorf("gatewaymw: %s: %w", HeaderActualCost, err)
	}
	a := eai.Actual{Cost: c}
	if tokens = strings.TrimSpace(tokens); tokens != "" {
		n, err := strconv.ParseInt(tokens, 10, 64)
		if err != nil || n < 0 {
			return eai.Actual{}, fmt.Errorf("gatewaymw: %s: %q is not a count", HeaderActualTokens, tokens)
		}
		a.Tokens = n
	}
	return a, nil
}

// writer records the status and takes the X-EAI-Actual-* headers out before they are sent.
type writer struct {
	http.ResponseWriter
	status      int
	captured    bool
	cost        string
	tokens      string
	wroteHeader bool
}

func (w *writer) capture() {
	if w.captured {
		return
	}
	w.captured = true
	h := w.ResponseWriter.Header()
	w.cost, w.tokens = h.Get(HeaderActualCost), h.Get(HeaderActualTokens)
	h.Del(HeaderActualCost)
	h.Del(HeaderActualTokens)
	if w.status == 0 {
		w.status = http.StatusOK
	}
}

// WriteHeader records the status and strips the X-EAI-Actual-* headers.
func (w *writer) WriteHeader(code int) {
	if !w.wroteHeader && code >= 200 {
		w.wroteHeader = true
		w.status = code
		w.capture()
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write writes the body (an implicit 200 first).
func (w *writer) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Flush flushes when the underlying writer can.
func (w *writer) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeEnvelope(w http.ResponseWriter, status int, code, message, requestID string) {
	body := map[string]any{"error": map[string]any{
		"code": code, "message": message, "message_i18n": map[string]string{"en": message},
		"details": nil, "request_id": requestID,
	}}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
