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

	s settings
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
		userAgent:      "eai-go/" + Version,
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
	c := &Client{s: s}
	c.FinOps = &FinOpsService{c: c}
	c.Providers = &ProvidersService{c: c}
	c.Usage = &UsageService{c: c}
	c.Tenants = &TenantsService{c: c}
	c.Auth = &AuthService{c: c}
	c.Audit = &AuditService{c: c}
	return c, nil
}

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
	n := &Client{s: s}
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
// *APIError. POST is retried only when the server surely did not act unless Idempotent(true) is given.
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

func isIdempotentMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}

// send carries out a request with its retries and decodes the answer into out.
func (c *Client) send(ctx context.Context, cl *call, method, path string, body []byte, out any) error {
	if ctx == nil {
		ctx = context.Background()
	}
	idempotent := isIdempotentMethod(method)
	if cl.idempotent != nil {
		idempotent = *cl.idempotent
	}
	target, err := c.url(cl, path)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		status, header, respBody, sendErr := c.attempt(ctx, cl, method, target, body)
		var failure error
		retry := false
		var retryAfter time.Duration
		if sendErr != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("eai: %s %s: %w", method, path, ctx.Err())
			}
			failure = &TransportError{Method: method, URL: target, Attempts: attempt, Err: sendErr}
			retry = idempotent || notSent(sendErr)
		} else if status >= 200 && status < 300 {
			return decodeAnswer(method, path, status, header, respBody, out)
		} else {
			apiErr := decodeError(method, path, status, header, respBody)
			apiErr.Attempts = attempt
			failure = apiErr
			retryAfter = apiErr.RetryAfter
			switch {
			case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
				retry = true // the server refused before acting
			case status >= 500:
				retry = idempotent
			}
		}
		if !retry || attempt > cl.maxRetries {
			return failure
		}
		wait := backoff(&cl.settings, attempt-1, retryAfter)
		if cl.onRetry != nil {
			cl.onRetry(RetryEvent{Method: method, Path: path, Attempt: attempt, Err: failure, Wait: wait})
		}
		if err := sleep(ctx, wait); err != nil {
			return fmt.Errorf("eai: %s %s: %w (while waiting to retry after: %w)", method, path, err, failure)
		}
	}
}

// notSent reports whether a transport error surely happened before the request reached the server.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// backoff is the wait before retry number retry+1: Retry-After when the server gave one (capped), else a
// random wait in [0, min(max, base × 2^retry)].
func backoff(s *settings, retry int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		if retryAfter > s.maxRetryAfter {
			return s.maxRetryAfter
		}
		return retryAfter
	}
	if retry > 30 {
		retry = 30
	}
	ceiling := s.retryBaseDelay << uint(retry)
	if ceiling > s.retryMaxDelay || ceiling < 0 {
		ceiling = s.retryMaxDelay
	}
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rand.Int63n(int64(ceiling) + 1))
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
func (c *Client) attempt(ctx context.Context, cl *call, method, target string, body []byte) (int, http.Header, []byte, error) {
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
	e := &APIError{
		Status:     status,
		Method:     method,
		Path:       path,
		RequestID:  header.Get("X-Request-Id"),
		RetryAfter: parseRetryAfter(header.Get("Retry-After")),
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
	e.Code = codeForStatus(status)
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

// parseRetryAfter reads a Retry-After header: seconds (an integer or a decimal) or an HTTP date.
func parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > 86400 {
			secs = 86400
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
