package eaitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Fault is what the proxy does to matching requests instead of (or after) forwarding them.
type Fault struct {
	// Method and Path select the requests ("" matches any).
	Method, Path string
	// Times is how many matching requests get the fault (then they pass through).
	Times int
	// Status is the status answered (503, 429, 500, …), with the API's error envelope. 0 with Drop.
	Status int
	// RetryAfter, if set, is sent as the Retry-After header.
	RetryAfter string
	// Forward sends the request to the server first (which acts on it) and then loses its answer: the client
	// gets the fault instead, as when an answer is lost on the way back.
	Forward bool
	// Drop closes the connection without an answer (a transport error for the client).
	Drop bool
	// Delay holds the request this long first; with Status 0 and no Drop it is then passed through.
	Delay time.Duration
}

// Proxy is a reverse proxy in front of a real server that injects faults and counts requests.
type Proxy struct {
	// URL is the proxy's base URL.
	URL string

	srv       *httptest.Server
	rp        *httputil.ReverseProxy
	mu        sync.Mutex
	faults    []*Fault
	counts    map[string]int
	faulted   map[string]int
	exchanges []Exchange
}

// Exchange is one request the proxy answered.
type Exchange struct {
	// Method, Path and Query of the request.
	Method, Path, Query string
	// Tenant is its X-EAI-Tenant header.
	Tenant string
	// Status is the status the client got (0 for a dropped connection).
	Status int
	// Body is the request's body as the server read it, Answer the response's body (each its first
	// maxRecorded bytes).
	Body, Answer []byte
}

// maxRecorded bounds what an Exchange keeps of a body.
const maxRecorded = 1 << 16

// capped keeps the first maxRecorded bytes written to it.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxRecorded - c.Len(); room > 0 {
		if len(p) > room {
			c.Buffer.Write(p[:room])
		} else {
			c.Buffer.Write(p)
		}
	}
	return len(p), nil
}

type statusWriter struct {
	http.ResponseWriter
	status int
	answer capped
}

// WriteHeader records the status.
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_, _ = w.answer.Write(b)
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack gives the connection (to drop it).
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.ResponseWriter.(http.Hijacker).Hijack()
}

// NewProxy starts a proxy to target (a server's base URL).
func NewProxy(target string) *Proxy {
	u, err := url.Parse(target)
	if err != nil {
		panic(err)
	}
	p := &Proxy{counts: map[string]int{}, faulted: map[string]int{}}
	p.rp = httputil.NewSingleHostReverseProxy(u)
	p.rp.ErrorLog = log.New(io.Discard, "", 0) // canceled requests are expected in the tests
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	return p
}

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }

// Inject adds a fault (faults are tried in the order they were added).
func (p *Proxy) Inject(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := f
	p.faults = append(p.faults, &c)
}

// Reset forgets the faults and the counts.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = nil
	p.exchanges = nil
	p.counts = map[string]int{}
	p.faulted = map[string]int{}
}

// Count returns how many requests METHOD PATH the proxy received (faulted ones included).
func (p *Proxy) Count(method, path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[method+" "+path]
}

// Faulted returns how many requests METHOD PATH got a fault.
func (p *Proxy) Faulted(method, path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faulted[method+" "+path]
}

func (p *Proxy) take(r *http.Request) *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := r.Method + " " + r.URL.Path
	p.counts[key]++
	for _, f := range p.faults {
		if f.Times <= 0 || (f.Method != "" && f.Method != r.Method) || (f.Path != "" && f.Path != r.URL.Path) {
			continue
		}
		f.Times--
		p.faulted[key]++
		c := *f
		return &c
	}
	return nil
}

var codes = map[int]string{
	429: "rate_limited", 500: "internal", 502: "unavailable", 503: "unavailable", 504: "unavailable",
}

// Exchanges returns the requests answered so far, in order.
func (p *Proxy) Exchanges() []Exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Exchange(nil), p.exchanges...)
}

func (p *Proxy) serve(rw http.ResponseWriter, r *http.Request) {
	w := &statusWriter{ResponseWriter: rw}
	var sent capped
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(r.Body, &sent), r.Body}
	}
	defer func() {
		p.mu.Lock()
		p.exchanges = append(p.exchanges, Exchange{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Tenant: r.Header.Get("X-EAI-Tenant"), Status: w.status,
			Body: append([]byte(nil), sent.Bytes()...), Answer: append([]byte(nil), w.answer.Bytes()...)})
		p.mu.Unlock()
	}()
	f := p.take(r)
	if f != nil && f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
		}
		if f.Status == 0 && !f.Drop {
			f = nil
		}
	}
	if f == nil {
		p.rp.ServeHTTP(w, r)
		return
	}
	if f.Forward {
		rec := httptest.NewRecorder()
		p.rp.ServeHTTP(rec, r)
	} else {
		_, _ = io.Copy(io.Discard, r.Body)
	}
	if f.Drop {
		conn, _, err := w.Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	code := codes[f.Status]
	if code == "" {
		code = "internal"
	}
	msg := fmt.Sprintf("injected fault %d", f.Status)
	var body bytes.Buffer
	_ = json.NewEncoder(&body).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": msg, "message_i18n": map[string]string{"en": msg, "fr": "panne injectée " + strconv.Itoa(f.Status)},
		"details": nil, "request_id": "fault-proxy",
	}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "fault-proxy")
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	w.WriteHeader(f.Status)
	_, _ = w.Write(body.Bytes())
}
