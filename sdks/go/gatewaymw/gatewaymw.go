// Package gatewaymw is an net/http middleware that makes every request of a gateway (an LLM proxy, an
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
// Other failures: an error of Config.Reserve (the request's estimate) is answered 422 `validation_error`;
// a reservation that fails for another reason than a budget (the control plane unreachable, a bad key, a
// 5xx) is answered 503 `unavailable` (fail closed), each in the API's error envelope
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
	"net/http"
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

// Config configures New.
type Config struct {
	// Client is the eai-gpu client (a usage_reporter key naming the tenant with Tenant, or a tenant's key).
	Client *eai.Client
	// Action is the reservation's action, the usage type of the committed events, e.g. "llm.invoke".
	Action string
	// Reserve returns the request's estimate. An error answers 422 without calling the handler.
	Reserve func(*http.Request) (eai.Estimate, error)
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

// New returns the middleware. It panics when Client, Action or Reserve is missing.
func New(cfg Config) func(http.Handler) http.Handler {
	if cfg.Client == nil || cfg.Action == "" || cfg.Reserve == nil {
		panic("gatewaymw.New: Config.Client, Config.Action and Config.Reserve are required")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serve(cfg, next, w, r)
		})
	}
}

func serve(cfg Config, next http.Handler, w http.ResponseWriter, r *http.Request) {
	est, err := cfg.Reserve(r)
	if err != nil {
		writeEnvelope(w, http.StatusUnprocessableEntity, eai.CodeValidation,
			"The request's cost could not be estimated: "+err.Error(), "")
		return
	}
	var opts []eai.RequestOption
	if cfg.Tenant != nil {
		if t := cfg.Tenant(r); t != "" {
			opts = append(opts, eai.WithTenant(t))
		}
	}
	req := eai.ReservationRequest{Action: cfg.Action, Estimate: est, TTLSeconds: cfg.TTLSeconds}
	if cfg.DeploymentID != nil {
		req.DeploymentID = cfg.DeploymentID(r)
	}
	res, err := cfg.Client.FinOps.Reserve(r.Context(), req, opts...)
	if err != nil {
		var apiErr *eai.APIError
		if errors.As(err, &apiErr) && errors.Is(err, eai.ErrBudgetExceeded) {
			if json.Valid(apiErr.Body) && len(apiErr.Body) > 0 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusPaymentRequired)
				_, _ = w.Write(apiErr.Body)
				return
			}
			writeEnvelope(w, http.StatusPaymentRequired, apiErr.Code, apiErr.Message, apiErr.RequestID)
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
