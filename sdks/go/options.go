package eai

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of the client's settings.
const (
	// DefaultTimeout is the time allowed to one attempt of a request (answer and body).
	DefaultTimeout = 30 * time.Second
	// DefaultMaxRetries is how many times a failed request is sent again (so 1 + 3 attempts at most).
	DefaultMaxRetries = 3
	// DefaultMaxBatchSize is how many samples or usage events go in one request: half the server's
	// default EAI_MAX_BATCH (10,000).
	DefaultMaxBatchSize = 5000
	// DefaultRetryBaseDelay is the first step of the exponential backoff.
	DefaultRetryBaseDelay = 500 * time.Millisecond
	// DefaultRetryMaxDelay caps one backoff wait.
	DefaultRetryMaxDelay = 8 * time.Second
	// DefaultMaxRetryAfter caps the wait a Retry-After header may impose.
	DefaultMaxRetryAfter = 60 * time.Second
)

// settings are a client's configuration; a call works on a copy its RequestOptions may change.
type settings struct {
	baseURL        *url.URL
	apiKey         string
	tenant         string
	locale         string
	userAgent      string
	httpClient     *http.Client
	timeout        time.Duration
	maxRetries     int
	maxBatchSize   int
	splitTooLarge  bool
	retryBaseDelay time.Duration
	retryMaxDelay  time.Duration
	maxRetryAfter  time.Duration
	headers        http.Header
	onRetry        func(RetryEvent)
	logger         *slog.Logger
}

// call is the configuration of one call: the client's settings as changed by the call's options.
type call struct {
	settings
	query          url.Values
	requestID      string
	traceparent    string
	idempotencyKey string
	response       *Response
	accept         string // the Accept header when not application/json (a file download)
}

// ClientOption configures a Client (NewClient).
type ClientOption interface {
	applyClient(*settings) error
}

// RequestOption configures one call; it overrides the client's setting for that call only.
type RequestOption interface {
	applyRequest(*call) error
}

// Option is an option usable both with NewClient and on one call (WithTenant, WithLocale, WithTimeout, …).
type Option interface {
	ClientOption
	RequestOption
}

type clientOnly func(*settings) error

func (f clientOnly) applyClient(s *settings) error { return f(s) }

type requestOnly func(*call) error

func (f requestOnly) applyRequest(c *call) error { return f(c) }

type both func(*settings) error

func (f both) applyClient(s *settings) error { return f(s) }
func (f both) applyRequest(c *call) error    { return f(&c.settings) }

// WithBaseURL sets the control plane's URL, e.g. `https://eai-gpu.internal:8080` (a path prefix is kept).
// Default: the EAI_BASE_URL environment variable.
func WithBaseURL(baseURL string) ClientOption {
	return clientOnly(func(s *settings) error {
		u, err := parseBaseURL(baseURL)
		if err != nil {
			return err
		}
		s.baseURL = u
		return nil
	})
}

func parseBaseURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, configError("the base URL is empty (WithBaseURL or EAI_BASE_URL)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, configError("base URL %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, configError("base URL %q: the scheme must be http or https", raw)
	}
	if u.Host == "" {
		return nil, configError("base URL %q has no host", raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// WithAPIKey sets the API key (`eai_live_…`) sent as `Authorization: Bearer`. Default: the EAI_API_KEY
// environment variable; NewClient fails when neither gives one. On a call, it uses another key for that call.
func WithAPIKey(key string) Option {
	return both(func(s *settings) error {
		key = strings.TrimSpace(key)
		if key == "" {
			return configError("the API key is empty (WithAPIKey or EAI_API_KEY)")
		}
		s.apiKey = key
		return nil
	})
}

// WithTenant signs every call (or, on a call, that call) in to a tenant, by slug (`acme`) or id, with the
// `X-EAI-Tenant` header: a platform_admin's reads become that tenant's; a tenant key may only name its own.
// An empty tenant sends no header (on a call: not even the client's).
func WithTenant(tenant string) Option {
	return both(func(s *settings) error {
		s.tenant = strings.TrimSpace(tenant)
		return nil
	})
}

// WithLocale sets the language of error messages (`Accept-Language`): "en" (the server's default) or "fr".
// APIError.MessageI18n always holds both.
func WithLocale(locale string) Option {
	return both(func(s *settings) error {
		s.locale = strings.TrimSpace(locale)
		return nil
	})
}

// WithHTTPClient sets the *http.Client that sends the requests (proxies, TLS, instrumentation). Its own
// Timeout, if any, applies on top of WithTimeout. Default: a client of its own with a pooled transport.
func WithHTTPClient(hc *http.Client) ClientOption {
	return clientOnly(func(s *settings) error {
		if hc == nil {
			return configError("WithHTTPClient(nil)")
		}
		s.httpClient = hc
		return nil
	})
}

// WithTimeout sets the time allowed to one attempt (the answer and its body); retries get as much again.
// Default DefaultTimeout; 0 means no limit (the context's deadline still applies).
func WithTimeout(d time.Duration) Option {
	return both(func(s *settings) error {
		if d < 0 {
			return configError("WithTimeout(%v): must be >= 0", d)
		}
		s.timeout = d
		return nil
	})
}

// WithMaxRetries sets how many times a failed request is sent again (network errors, 429 and 5xx; never
// another 4xx). 0 disables retries. Default DefaultMaxRetries.
func WithMaxRetries(n int) Option {
	return both(func(s *settings) error {
		if n < 0 {
			return configError("WithMaxRetries(%d): must be >= 0", n)
		}
		s.maxRetries = n
		return nil
	})
}

// WithMaxBatchSize sets how many samples or usage events go in one request (keep it at or under the
// server's EAI_MAX_BATCH). Default DefaultMaxBatchSize.
func WithMaxBatchSize(n int) Option {
	return both(func(s *settings) error {
		if n < 1 {
			return configError("WithMaxBatchSize(%d): must be >= 1", n)
		}
		s.maxBatchSize = n
		return nil
	})
}

// WithSplitOnPayloadTooLarge sets whether a batch refused with 413 `payload_too_large` (which stored
// nothing) is halved and sent again, and the rest of the call sent in batches of that size. Default true.
func WithSplitOnPayloadTooLarge(split bool) Option {
	return both(func(s *settings) error {
		s.splitTooLarge = split
		return nil
	})
}

// WithUserAgent sets the User-Agent header. Default `eai-gpu-sdk-go/<Version>`.
func WithUserAgent(ua string) ClientOption {
	return clientOnly(func(s *settings) error {
		s.userAgent = ua
		return nil
	})
}

// WithRetryBackoff sets the exponential backoff between attempts: a random wait in
// [0, min(maxDelay, base × 2^retry)] (full jitter). Defaults DefaultRetryBaseDelay and DefaultRetryMaxDelay.
func WithRetryBackoff(base, maxDelay time.Duration) Option {
	return both(func(s *settings) error {
		if base < 0 || maxDelay < 0 {
			return configError("WithRetryBackoff(%v, %v): must be >= 0", base, maxDelay)
		}
		s.retryBaseDelay, s.retryMaxDelay = base, maxDelay
		return nil
	})
}

// WithMaxRetryAfter caps the wait a Retry-After header may impose before a retry. Default
// DefaultMaxRetryAfter.
func WithMaxRetryAfter(d time.Duration) Option {
	return both(func(s *settings) error {
		if d < 0 {
			return configError("WithMaxRetryAfter(%v): must be >= 0", d)
		}
		s.maxRetryAfter = d
		return nil
	})
}

// RetryEvent describes a failed attempt that is about to be retried (see WithOnRetry).
type RetryEvent struct {
	// Method and Path name the request.
	Method, Path string
	// Attempt is the number of the attempt that failed (1 for the first).
	Attempt int
	// Err is its error (*APIError or *TransportError).
	Err error
	// Wait is how long the client waits before the next attempt.
	Wait time.Duration
}

// WithOnRetry sets a function called before each retry (for logs or metrics). It must not block.
func WithOnRetry(fn func(RetryEvent)) Option {
	return both(func(s *settings) error {
		s.onRetry = fn
		return nil
	})
}

// WithHeader adds a header to every request (or, on a call, to that call). The SDK's own headers
// (Authorization, X-EAI-Tenant, Accept-Language, Content-Type) cannot be overridden this way.
func WithHeader(key, value string) Option {
	return both(func(s *settings) error {
		if s.headers == nil {
			s.headers = http.Header{}
		} else {
			s.headers = s.headers.Clone()
		}
		s.headers.Add(key, value)
		return nil
	})
}

// WithQuery adds query parameters to a call, e.g. the period of FinOps.GpuAllocation:
//
//	eai.WithQuery(map[string]string{"from": "2026-10-01", "to": "2026-10-31"})
//
// An empty value leaves the parameter out.
func WithQuery(params map[string]string) RequestOption {
	return requestOnly(func(c *call) error {
		for k, v := range params {
			if v == "" {
				continue
			}
			c.query.Set(k, v)
		}
		return nil
	})
}

// WithQueryParam adds one query parameter to a call (see WithQuery).
func WithQueryParam(key, value string) RequestOption {
	return WithQuery(map[string]string{key: value})
}

// WithGroupBy sets the dimensions of a row of FinOps.GpuUsage (query parameter `group_by`), in the order given,
// each once; it replaces an earlier WithGroupBy. None: the server's default, DimensionDeployment.
func WithGroupBy(dims ...Dimension) RequestOption {
	return requestOnly(func(c *call) error {
		if len(dims) == 0 {
			c.query.Del("group_by")
			return nil
		}
		names := make([]string, len(dims))
		for i, d := range dims {
			names[i] = string(d)
		}
		c.query.Set("group_by", strings.Join(names, ","))
		return nil
	})
}

// WithFilter keeps the rows of FinOps.GpuUsage whose dimension dim is one of values (query parameter `filter`,
// `dim:value` pairs). Several WithFilter add up: values of one dimension, any of them; several dimensions, all
// of them. A value may not contain a comma (the pairs' separator); no value at all is an error too (ErrConfig).
func WithFilter(dim Dimension, values ...string) RequestOption {
	return requestOnly(func(c *call) error {
		if len(values) == 0 {
			return configError("WithFilter(%q): no value", dim)
		}
		pairs := make([]string, 0, len(values)+1)
		if prev := c.query.Get("filter"); prev != "" {
			pairs = append(pairs, prev)
		}
		for _, v := range values {
			if strings.Contains(v, ",") {
				return configError("WithFilter(%q, %q): a value may not contain a comma", dim, v)
			}
			pairs = append(pairs, string(dim)+":"+v)
		}
		c.query.Set("filter", strings.Join(pairs, ","))
		return nil
	})
}

// WithIdleBelow sets the idle threshold of FinOps.GpuSlurmReconciliation (query parameter `idle_below`): a job
// whose GPUs were busy less than this share of the time Slurm allocated them is SlurmJobIdle. A decimal from 0
// to 1 ("0.1", the server's default, is 10 %); out of range, the server answers validation_error on
// idle_below. An empty Decimal leaves the parameter out.
func WithIdleBelow(share Decimal) RequestOption {
	return WithQueryParam("idle_below", string(share))
}

// WithIdleUtilization sets a threshold of FinOps.GpuRecommendations (query parameter `idle_utilization`): a
// GPU-hour busy at most this share of its time is idle. A decimal from 0 to 1 (the server's default "0.05");
// out of range, the server answers validation_error on idle_utilization. An empty Decimal leaves it out.
func WithIdleUtilization(share Decimal) RequestOption {
	return WithQueryParam("idle_utilization", string(share))
}

// WithIdleShare sets a threshold of FinOps.GpuRecommendations (query parameter `idle_share`): a GPU idle for at
// least this share of the hours it ran could go. A decimal from 0 to 1 (default "0.5").
func WithIdleShare(share Decimal) RequestOption {
	return WithQueryParam("idle_share", string(share))
}

// WithLowUtilization sets a threshold of FinOps.GpuRecommendations (query parameter `low_utilization`): a
// deployment busy under this share of its GPU-hours is oversized. A decimal from 0 to 1 (default "0.3").
func WithLowUtilization(share Decimal) RequestOption {
	return WithQueryParam("low_utilization", string(share))
}

// WithMonth sets the month of FinOps.GpuForecast, or of FinOps.GpuStatements' filter (query parameter
// `period`, "YYYY-MM"). A year outside 1..9999 or a month outside January..December is a configuration error,
// nothing sent.
func WithMonth(year int, month time.Month) RequestOption {
	if year < 1 || year > 9999 || month < time.January || month > time.December {
		return requestOnly(func(*call) error {
			return configError("WithMonth: no month %04d-%02d", year, int(month))
		})
	}
	return WithQueryParam("period", fmt.Sprintf("%04d-%02d", year, int(month)))
}

// WithFocusVersion sets the FOCUS version of FinOps.GpuAllocationFocus's columns (query parameter `version`):
// FocusVersion13 (the server's default) or FocusVersion12; another is the server's validation_error on
// version. An empty string leaves the parameter out.
func WithFocusVersion(version string) RequestOption {
	return WithQueryParam("version", version)
}

// WithFocusGranularity sets the rows of FinOps.GpuAllocationFocus (query parameter `granularity`):
// FocusGranularityDay (the server's default, a row per UTC day) or FocusGranularityHour; another is the
// server's validation_error on granularity. An empty string leaves the parameter out.
func WithFocusGranularity(granularity string) RequestOption {
	return WithQueryParam("granularity", granularity)
}

// WithRequestID sets the call's X-Request-Id, echoed by the server in its answer, its logs and the audit
// trail. Every attempt of the call carries it.
func WithRequestID(id string) RequestOption {
	return requestOnly(func(c *call) error {
		c.requestID = id
		return nil
	})
}

// Idempotent is kept for compatibility and has no effect: every non-GET call now carries an
// Idempotency-Key (WithIdempotencyKey), so every call is retried per the one retry table.
//
// Deprecated: every call is retried safely; there is nothing to declare.
func Idempotent(bool) RequestOption {
	return requestOnly(func(*call) error { return nil })
}

// WithIdempotencyKey sends the call with this Idempotency-Key (default: a fresh UUID v4 per call, the same on
// its retries). The server answers a repeated key with the first answer, so a create sent twice makes one
// resource. A batched ingest sent in several requests uses key for its first request and key-2, key-3, … for
// the next ones.
func WithIdempotencyKey(key string) RequestOption {
	return requestOnly(func(c *call) error {
		if strings.TrimSpace(key) == "" {
			return configError("WithIdempotencyKey: the key is empty")
		}
		c.idempotencyKey = key
		return nil
	})
}

// WithTraceparent forwards a W3C trace context as the call's `traceparent` header (on every attempt).
func WithTraceparent(traceparent string) RequestOption {
	return requestOnly(func(c *call) error {
		c.traceparent = traceparent
		return nil
	})
}

// WithLogger logs each attempt (method, path, status, attempt, wait; never a header, so never a key) on
// logger: a success at Debug, a retried failure at Info, a final failure at Warn. Default: no logging.
func WithLogger(logger *slog.Logger) Option {
	return both(func(s *settings) error {
		s.logger = logger
		return nil
	})
}

// Response is what a successful call's answer said besides its body; WithResponse fills one.
type Response struct {
	// StatusCode is the answer's HTTP status.
	StatusCode int
	// Header holds the answer's headers.
	Header http.Header
	// RequestID is the answer's X-Request-Id, to quote to the server's operators (and in its audit trail).
	RequestID string
	// Attempts is how many times the request was sent (1 + retries).
	Attempts int
	// IdempotencyKey is the key the request carried ("" for a GET).
	IdempotencyKey string
}

// WithResponse fills *into with the answer of a successful call: its request id, status, headers, attempts.
// For a batched ingest it holds the last request's answer.
//
//	var resp eai.Response
//	tenants, err := client.Tenants.List(ctx, eai.WithResponse(&resp))
//	log.Print(resp.RequestID)
func WithResponse(into *Response) RequestOption {
	return requestOnly(func(c *call) error {
		c.response = into
		return nil
	})
}
