package eai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Client is a client of the eai-gpu control plane's API (contracts/v1/openapi.json). Its services group the
// endpoints; Do calls any other. A Client is safe for concurrent use; create one and share it.
type Client struct {
	// FinOps: GPU samples, the cost allocation, allocation policies, budgets and reservations (/v1/finops/…).
	FinOps *FinOpsService
	// Providers: the local inference providers: their catalog and registration (/v1/providers).
	Providers *ProvidersService
	// Usage: usage events (/v1/usage/events). See package usage for a builder and a background emitter.
	Usage *UsageService
	// Tenants: registered tenants (/v1/tenants).
	Tenants *TenantsService
	// Auth: the caller's identity and API keys (/v1/auth/…).
	Auth *AuthService
	// Audit: the audit hash chain (/v1/audit/…).
	Audit *AuditService

	s       settings
	closers *closers // shared by the copies of With
}

// closers are what Client.Close closes: the usage emitters made on the client.
type closers struct {
	mu   sync.Mutex
	list []interface{ Close(context.Context) error }
}

// NewClient returns a client configured by opts. The base URL defaults to the EAI_BASE_URL environment
// variable and the API key to EAI_API_KEY; it is an error (matching ErrConfig) when either is missing.
//
//	client, err := eai.NewClient(eai.WithBaseURL("https://eai-gpu.internal:8080"),
//		eai.WithAPIKey(os.Getenv("EAI_API_KEY")), eai.WithTenant("acme"), eai.WithLocale("en"))
func NewClient(opts ...ClientOption) (*Client, error) {
	s := settings{
		timeout:        DefaultTimeout,
		maxRetries:     DefaultMaxRetries,
		maxBatchSize:   DefaultMaxBatchSize,
		splitTooLarge:  true,
		retryBaseDelay: DefaultRetryBaseDelay,
		retryMaxDelay:  DefaultRetryMaxDelay,
		maxRetryAfter:  DefaultMaxRetryAfter,
		userAgent:      "eai-gpu-sdk-go/" + Version,
	}
	if env := os.Getenv("EAI_BASE_URL"); env != "" {
		u, err := parseBaseURL(env)
		if err != nil {
			return nil, fmt.Errorf("EAI_BASE_URL: %w", err)
		}
		s.baseURL = u
	}
	s.apiKey = strings.TrimSpace(os.Getenv("EAI_API_KEY"))
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.applyClient(&s); err != nil {
			return nil, err
		}
	}
	if s.baseURL == nil {
		return nil, configError("no base URL: use WithBaseURL or set EAI_BASE_URL")
	}
	if s.apiKey == "" {
		return nil, configError("no API key: use WithAPIKey or set EAI_API_KEY")
	}
	if s.httpClient == nil {
		s.httpClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	c := &Client{s: s, closers: &closers{}}
	c.FinOps = &FinOpsService{c: c}
	c.Providers = &ProvidersService{c: c}
	c.Usage = &UsageService{c: c}
	c.Tenants = &TenantsService{c: c}
	c.Auth = &AuthService{c: c}
	c.Audit = &AuditService{c: c}
	return c, nil
}

// Config is a client's retry, timeout and batching settings (see Client.Config).
type Config struct {
	Timeout        time.Duration // per attempt (DefaultTimeout)
	MaxRetries     int           // DefaultMaxRetries
	RetryBaseDelay time.Duration // DefaultRetryBaseDelay
	RetryMaxDelay  time.Duration // DefaultRetryMaxDelay
	MaxRetryAfter  time.Duration // DefaultMaxRetryAfter
	MaxBatchSize   int           // DefaultMaxBatchSize
}

// Config returns the client's retry, timeout and batching settings.
func (c *Client) Config() Config {
	return Config{Timeout: c.s.timeout, MaxRetries: c.s.maxRetries, RetryBaseDelay: c.s.retryBaseDelay,
		RetryMaxDelay: c.s.retryMaxDelay, MaxRetryAfter: c.s.maxRetryAfter, MaxBatchSize: c.s.maxBatchSize}
}

// OnClose registers something Close closes (usage.NewEmitter registers its emitter), in order.
func (c *Client) OnClose(closer interface{ Close(context.Context) error }) {
	c.closers.mu.Lock()
	defer c.closers.mu.Unlock()
	c.closers.list = append(c.closers.list, closer)
}

// Close closes every usage emitter made on the client (or a copy of it from With), each flushing what it
// still holds, so nothing queued is lost at exit: Go has no exit hook, so `defer client.Close()` in main.
// It returns the emitters' errors joined (an *usage.UndeliveredError lists what could not be sent).
// Close is CloseContext with context.Background() (each emitter bounds itself with its CloseTimeout).
func (c *Client) Close() error { return c.CloseContext(context.Background()) }

// CloseContext is Close bounded by ctx.
func (c *Client) CloseContext(ctx context.Context) error {
	c.closers.mu.Lock()
	list := c.closers.list
	c.closers.list = nil
	c.closers.mu.Unlock()
	var errs []error
	for _, cl := range list {
		if err := cl.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// UserAgent returns the User-Agent the client sends (default `eai-gpu-sdk-go/<Version>`).
func (c *Client) UserAgent() string { return c.s.userAgent }

// BaseURL returns the control plane's URL the client calls.
func (c *Client) BaseURL() string { return c.s.baseURL.String() }

// Tenant returns the tenant the client signs its calls in to ("" for none).
func (c *Client) Tenant() string { return c.s.tenant }

// MaxBatchSize returns the number of records the client puts in one ingest request.
func (c *Client) MaxBatchSize() int { return c.s.maxBatchSize }

// With returns a copy of the client with more options (another tenant, locale, key, …); the copy shares the
// HTTP client (and its connection pool).
func (c *Client) With(opts ...ClientOption) (*Client, error) {
	s := c.s
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.applyClient(&s); err != nil {
			return nil, err
		}
	}
	n := &Client{s: s, closers: c.closers}
	n.FinOps = &FinOpsService{c: n}
	n.Providers = &ProvidersService{c: n}
	n.Usage = &UsageService{c: n}
	n.Tenants = &TenantsService{c: n}
	n.Auth = &AuthService{c: n}
	n.Audit = &AuditService{c: n}
	return n, nil
}

// Do sends one request to the API, with the client's authentication, tenant, locale and retry policy, and
// decodes a 2xx JSON answer into out (nil: the answer is discarded; *json.RawMessage: kept as is; numbers
// decoded into an `any` are json.Number). path is relative to the base URL (`/v1/…`) and may carry a query.
// body is JSON-encoded (nil: no body; json.RawMessage or []byte: sent as is). An error answer is an
// *APIError (or one of its classes, see error_classes.go). Every call but a GET carries an Idempotency-Key
// (WithIdempotencyKey, else a fresh one), so every call is retried per the retry table.
//
// Do is how endpoints without a typed method are called.
func (c *Client) Do(ctx context.Context, method, path string, body, out any, opts ...RequestOption) error {
	cl, err := c.newCall(opts)
	if err != nil {
		return err
	}
	var raw []byte
	if body != nil {
		if raw, err = encodeBody(body); err != nil {
			return err
		}
	}
	return c.send(ctx, cl, method, path, raw, out)
}

func (c *Client) newCall(opts []RequestOption) (*call, error) {
	cl := &call{settings: c.s, query: url.Values{}}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.applyRequest(cl); err != nil {
			return nil, err
		}
	}
	return cl, nil
}

func encodeBody(body any) ([]byte, error) {
	switch b := body.(type) {
	case json.RawMessage:
		return b, nil
	case []byte:
		return b, nil
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("eai: encoding the request body: %w", err)
	}
	return raw, nil
}

// needsIdempotencyKey reports whether a method carries an Idempotency-Key: every one but GET, HEAD and
// OPTIONS (idempotent by nature).
func needsIdempotencyKey(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// retriedStatuses are the answers retried (behaviour.json `retried.statuses`), besides a 409
// idempotency_key_in_flight.
var retriedStatuses = map[int]bool{408: true, 429: true, 500: true, 502: true, 503: true, 504: true}

// send carries out a request with its retries and decodes the answer into out. Every non-GET call carries
// an Idempotency-Key (the caller's, or a fresh UUID v4), the same on each retry, so every call is retried
// per the table of contracts/v1/sdk/behaviour.json.
func (c *Client) send(ctx context.Context, cl *call, method, path string, body []byte, out any) error {
	if ctx == nil {
		ctx = context.Background()
	}
	target, err := c.url(cl, path)
	if err != nil {
		return err
	}
	key := ""
	if needsIdempotencyKey(method) {
		key = cl.idempotencyKey
		if key == "" {
			key = NewUUID()
		}
	}
	for attempt := 1; ; attempt++ {
		status, header, respBody, sendErr := c.attempt(ctx, cl, method, target, key, body)
		var failure error
		retry := false
		retryAfter, hasRetryAfter := time.Duration(0), false
		if sendErr != nil {
			if ctx.Err() != nil {
				c.logAttempt(cl, method, path, 0, attempt, 0, ctx.Err())
				return fmt.Errorf("eai: %s %s: %w", method, path, ctx.Err())
			}
			te := &TransportError{Method: method, URL: target, Attempts: attempt, Err: sendErr}
			failure = te
			if isTimeout(sendErr) {
				failure = &TimeoutError{te}
			}
			retry = true // connection refused or reset, answer dropped, timeout: the key makes it safe
		} else if status >= 200 && status < 300 {
			c.logAttempt(cl, method, path, status, attempt, 0, nil)
			if cl.response != nil {
				*cl.response = Response{StatusCode: status, Header: header, RequestID: header.Get("X-Request-Id"),
					Attempts: attempt, IdempotencyKey: key}
			}
			return decodeAnswer(method, path, status, header, respBody, out)
		} else {
			apiErr := decodeError(method, path, status, header, respBody)
			apiErr.Attempts = attempt
			failure = classify(apiErr)
			retryAfter, hasRetryAfter = parseRetryAfter(header.Get("Retry-After"))
			retry = retriedStatuses[status] || (status == http.StatusConflict && apiErr.Code == CodeIdempotencyKeyInFlight)
		}
		if !retry || attempt > cl.maxRetries {
			c.logAttempt(cl, method, path, status, attempt, 0, failure)
			return failure
		}
		var wait time.Duration
		if hasRetryAfter {
			if retryAfter > cl.maxRetryAfter {
				// Longer than the caller is willing to wait: raised at once.
				c.logAttempt(cl, method, path, status, attempt, 0, failure)
				return failure
			}
			wait = retryAfter
		} else {
			wait = backoff(&cl.settings, attempt)
		}
		c.logAttempt(cl, method, path, status, attempt, wait, failure)
		if cl.onRetry != nil {
			cl.onRetry(RetryEvent{Method: method, Path: path, Attempt: attempt, Err: failure, Wait: wait})
		}
		if err := sleep(ctx, wait); err != nil {
			return fmt.Errorf("eai: %s %s: %w (while waiting to retry after: %w)", method, path, err, failure)
		}
	}
}

// isTimeout reports whether a transport error is an attempt's timeout.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// logAttempt logs one attempt on the call's logger (never a header, so never a secret).
func (c *Client) logAttempt(cl *call, method, path string, status, attempt int, wait time.Duration, err error) {
	if cl.logger == nil {
		return
	}
	attrs := []any{"method", method, "path", path, "status", status, "attempt", attempt, "wait", wait}
	switch {
	case err == nil:
		cl.logger.Debug("eai: request", attrs...)
	case wait > 0:
		cl.logger.Info("eai: request failed, retrying", append(attrs, "error", err.Error())...)
	default:
		cl.logger.Warn("eai: request failed", append(attrs, "error", err.Error())...)
	}
}

// backoff is the wait before retry n (n = 1, 2, …) when the answer gave no Retry-After:
// d = min(base × 2^(n-1), max), and a random wait in [d/2, d].
func backoff(s *settings, n int) time.Duration {
	exp := n - 1
	if exp > 30 {
		exp = 30
	}
	d := s.retryBaseDelay << uint(exp)
	if d > s.retryMaxDelay || d < 0 {
		d = s.retryMaxDelay
	}
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + time.Duration(rand.Int63n(int64(d-half)+1))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) url(cl *call, path string) (string, error) {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	rel, err := url.Parse(path)
	if err != nil {
		return "", fmt.Errorf("eai: bad path %q: %w", path, err)
	}
	u := *cl.baseURL
	u.Path = cl.baseURL.Path + rel.Path
	if rel.RawPath != "" {
		u.RawPath = cl.baseURL.EscapedPath() + rel.RawPath
	}
	q := rel.Query()
	for k, vs := range cl.query {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

const maxErrorBody = 64 << 10

// attempt sends the request once and reads the whole answer within the call's timeout.
func (c *Client) attempt(ctx context.Context, cl *call, method, target, key string, body []byte) (int, http.Header, []byte, error) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if cl.timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, cl.timeout)
	}
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, target, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	for k, vs := range cl.headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Authorization", "Bearer "+cl.apiKey)
	if cl.accept != "" {
		req.Header.Set("Accept", cl.accept)
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if cl.userAgent != "" {
		req.Header.Set("User-Agent", cl.userAgent)
	}
	if cl.locale != "" {
		req.Header.Set("Accept-Language", cl.locale)
	} else {
		req.Header.Del("Accept-Language")
	}
	if cl.tenant != "" {
		req.Header.Set("X-EAI-Tenant", cl.tenant)
	} else {
		req.Header.Del("X-EAI-Tenant")
	}
	if cl.requestID != "" {
		req.Header.Set("X-Request-Id", cl.requestID)
	}
	if cl.traceparent != "" {
		req.Header.Set("traceparent", cl.traceparent)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := cl.httpClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	var data []byte
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		data, err = io.ReadAll(resp.Body)
	} else {
		data, err = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	}
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, resp.Header, data, nil
}

// decodeJSON decodes data into out, keeping numbers exact (json.Number) in untyped values.
func decodeJSON(data []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func decodeAnswer(method, path string, status int, header http.Header, data []byte, out any) error {
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], data...)
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%w: %s %s: %d with an empty body (request_id %s)", ErrInvalidResponse, method, path,
			status, header.Get("X-Request-Id"))
	}
	if err := decodeJSON(data, out); err != nil {
		return fmt.Errorf("%w: %s %s: %v (request_id %s)", ErrInvalidResponse, method, path, err,
			header.Get("X-Request-Id"))
	}
	return nil
}

type envelope struct {
	Error *struct {
		Code        string            `json:"code"`
		Message     string            `json:"message"`
		MessageI18n map[string]string `json:"message_i18n"`
		Details     []FieldError      `json:"details"`
		RequestID   string            `json:"request_id"`
	} `json:"error"`
}

func decodeError(method, path string, status int, header http.Header, data []byte) *APIError {
	retryAfter, _ := parseRetryAfter(header.Get("Retry-After"))
	e := &APIError{
		Status:     status,
		Method:     method,
		Path:       path,
		RequestID:  header.Get("X-Request-Id"),
		RetryAfter: retryAfter,
		Body:       data,
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err == nil && env.Error != nil && env.Error.Code != "" {
		e.Code = env.Error.Code
		e.Message = env.Error.Message
		e.MessageI18n = env.Error.MessageI18n
		e.Details = env.Error.Details
		if env.Error.RequestID != "" {
			e.RequestID = env.Error.RequestID
		}
		return e
	}
	text := strings.TrimSpace(string(data))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	e.Message = fmt.Sprintf("HTTP %d %s without the error envelope", status, http.StatusText(status))
	if text != "" {
		e.Message += ": " + text
	}
	return e
}

// parseRetryAfter reads a Retry-After header: seconds (an integer or a decimal) or an HTTP date; ok is
// false when there is none (or it cannot be read).
func parseRetryAfter(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0, true
		}
		if secs > 86400*365 {
			secs = 86400 * 365
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}
