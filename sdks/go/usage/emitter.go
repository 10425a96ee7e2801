package usage

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"

	eai "github.com/enterprise-ai/eai-go"
)

// Defaults of Options.
const (
	DefaultBatchSize      = 500
	DefaultFlushInterval  = time.Second
	DefaultBufferSize     = 10000
	DefaultRetryBaseDelay = 500 * time.Millisecond
	DefaultRetryMaxDelay  = 30 * time.Second
	DefaultCloseTimeout   = 30 * time.Second
)

// ErrBufferFull is returned by Emit when BufferSize events are already held: the event was NOT taken
// (nothing is ever dropped silently). Slow down, Flush, or persist the event yourself.
var ErrBufferFull = errors.New("usage: emitter buffer full")

// ErrClosed is returned by Emit after Close.
var ErrClosed = errors.New("usage: emitter closed")

// ErrUndelivered matches (errors.Is) every *UndeliveredError.
var ErrUndelivered = errors.New("usage: events not delivered")

// UndeliveredError is returned by Close (and Flush) when events could not be delivered: Pending ones (the
// server could not be reached in time: send them again later, same ids, they will not double) and Rejected
// ones (the server refused them, e.g. 422: fix them first). Events holds them all, pending first, so the
// caller can persist them.
type UndeliveredError struct {
	// Pending is the number of events not delivered yet.
	Pending int
	// Rejected is the number of events the server refused (not retried).
	Rejected int
	// Events are the pending events followed by the rejected ones.
	Events []eai.UsageEvent
	// Err is the last delivery error (or the context's error).
	Err error
}

// Error says how many events remain.
func (e *UndeliveredError) Error() string {
	msg := fmt.Sprintf("usage: %d event(s) not delivered (%d pending, %d rejected by the server)",
		e.Pending+e.Rejected, e.Pending, e.Rejected)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the last delivery error.
func (e *UndeliveredError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, usage.ErrUndelivered) true.
func (e *UndeliveredError) Is(target error) bool { return target == ErrUndelivered }

// Options configure an Emitter; zero values take the defaults.
type Options struct {
	// BatchSize is the most events sent in one request (default DefaultBatchSize). A full batch is sent at
	// once; a partial one every FlushInterval.
	BatchSize int
	// FlushInterval is how often a partial batch is sent (default DefaultFlushInterval).
	FlushInterval time.Duration
	// BufferSize is the most events held, the batch in flight and the rejected events not taken yet
	// (TakeRejected) included (default DefaultBufferSize, at least BatchSize): Emit returns ErrBufferFull
	// beyond. Memory is bounded by it.
	BufferSize int
	// RetryBaseDelay and RetryMaxDelay shape the backoff (full jitter) between deliveries of a batch that
	// failed for a transient reason (network, 429, 5xx), after the client's own retries.
	RetryBaseDelay, RetryMaxDelay time.Duration
	// CloseTimeout bounds Close and Flush when their context has no deadline (default DefaultCloseTimeout).
	CloseTimeout time.Duration
	// OnError, if set, is called (from the emitter's goroutine; it must not block) with each failed
	// delivery: retrying tells whether the batch is kept and sent again (transient) or was rejected.
	OnError func(err error, batch []eai.UsageEvent, retrying bool)
	// RequestOptions are added to every request (e.g. eai.WithTenant).
	RequestOptions []eai.RequestOption
}

// Stats are an Emitter's counters, in events unless said otherwise.
type Stats struct {
	// Emitted counts the events Emit took.
	Emitted int
	// Delivered counts the events the server stored.
	Delivered int
	// Rejected counts the events the server refused (never retried).
	Rejected int
	// Pending counts the events waiting or in flight.
	Pending int
	// BufferFull counts the Emit calls refused with ErrBufferFull.
	BufferFull int
	// Requests counts delivery attempts (calls of Client.Usage.Events).
	Requests int
	// Failures counts the delivery attempts that failed for a transient reason.
	Failures int
}

type item struct {
	seq uint64
	ev  eai.UsageEvent
}

// Emitter sends usage events in the background, in batches, in the order emitted, with at-least-once
// delivery: Emit gives each event its id at once, so a batch sent again (after a timeout, a 5xx, a lost
// answer) replaces the events on the server and never doubles them. Events that name their tenant by slug
// (NewEvent("acme", …)) go in requests of that tenant only, named by X-EAI-Tenant. A batch that fails for a transient reason stays at the head of the
// queue and is sent again, same ids, after a backoff; one the server refuses (4xx other than 429) is set
// aside (Rejected) — with a 422 naming records, only those, the rest being sent again. Close flushes,
// stops, and returns an *UndeliveredError listing what remains. Safe for concurrent use.
type Emitter struct {
	client *eai.Client
	opts   Options

	mu            sync.Mutex
	queue         []item
	nextSeq       uint64
	rejected      []eai.UsageEvent
	closing       bool
	closed        bool
	closeErr      error
	flushWaiters  int
	force         bool
	lastErr       error
	stats         Stats
	changed       chan struct{}
	kick          chan struct{}
	stop          chan struct{}
	done          chan struct{}
	sendCtx       context.Context
	cancelSending context.CancelFunc
}

// NewEmitter starts an emitter that sends through client (its key, tenant and retry policy). Stop it with
// Close, or close the client: client.Close() closes (and so flushes) every emitter made on it, so
// `defer client.Close()` in main loses nothing queued at exit.
func NewEmitter(client *eai.Client, opts Options) *Emitter {
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.BufferSize <= 0 {
		opts.BufferSize = DefaultBufferSize
	}
	if opts.BufferSize < opts.BatchSize {
		opts.BufferSize = opts.BatchSize
	}
	if opts.RetryBaseDelay <= 0 {
		opts.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if opts.RetryMaxDelay <= 0 {
		opts.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = DefaultCloseTimeout
	}
	e := &Emitter{
		client:  client,
		opts:    opts,
		changed: make(chan struct{}),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	e.sendCtx, e.cancelSending = context.WithCancel(context.Background())
	go e.run()
	client.OnClose(e)
	return e
}

// Emit queues an event without blocking. An empty EventID gets a random uuid v4 now (kept by every retry),
// an empty SchemaVersion "1.0", an empty OccurredAt the current instant. The event is validated
// (*ValidationError); ErrBufferFull when BufferSize events wait; ErrClosed after Close. The emitter keeps
// its own copy of the event.
func (e *Emitter) Emit(ev eai.UsageEvent) error {
	ev = cloneEvent(ev)
	if ev.EventID == "" {
		ev.EventID = eai.NewUUID()
	}
	if ev.SchemaVersion == "" {
		ev.SchemaVersion = SchemaVersion
	}
	if ev.OccurredAt == "" {
		ev.OccurredAt = eai.FormatTimestamp(time.Now())
	}
	if ev.Units == nil {
		ev.Units = map[string]eai.Decimal{}
	}
	if err := Validate(ev); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closing {
		return ErrClosed
	}
	if len(e.queue)+len(e.rejected) >= e.opts.BufferSize {
		e.stats.BufferFull++
		return ErrBufferFull
	}
	e.nextSeq++
	e.queue = append(e.queue, item{seq: e.nextSeq, ev: ev})
	e.stats.Emitted++
	if len(e.queue) >= e.opts.BatchSize {
		e.wake()
	}
	return nil
}

// wake nudges the sending goroutine (non-blocking).
func (e *Emitter) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// notify wakes every Flush and Close waiting on a change; e.mu is held.
func (e *Emitter) notify() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// Stats returns the emitter's counters.
func (e *Emitter) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Pending = len(e.queue)
	return s
}

// Pending returns a copy of the events not delivered yet (waiting or in flight), oldest first.
func (e *Emitter) Pending() []eai.UsageEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]eai.UsageEvent, len(e.queue))
	for i, it := range e.queue {
		out[i] = it.ev
	}
	return out
}

// Rejected returns a copy of the events the server refused (they are not retried).
func (e *Emitter) Rejected() []eai.UsageEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]eai.UsageEvent(nil), e.rejected...)
}

// TakeRejected returns the events the server refused and forgets them (so that Flush and Close stop
// reporting them).
func (e *Emitter) TakeRejected() []eai.UsageEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.rejected
	e.rejected = nil
	return out
}

func (e *Emitter) withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, e.opts.CloseTimeout)
}

// Flush sends every event emitted before the call and waits until each is delivered or rejected, or ctx
// ends (without a deadline on ctx, Options.CloseTimeout applies). It returns an *UndeliveredError when
// events remain pending or rejected events have not been taken (TakeRejected).
func (e *Emitter) Flush(ctx context.Context) error {
	ctx, cancel := e.withDefaultTimeout(ctx)
	defer cancel()
	e.mu.Lock()
	target := e.nextSeq
	e.flushWaiters++
	e.force = true
	e.mu.Unlock()
	e.wake()
	defer func() {
		e.mu.Lock()
		e.flushWaiters--
		e.mu.Unlock()
	}()
	for {
		e.mu.Lock()
		settled := len(e.queue) == 0 || e.queue[0].seq > target || e.closed
		ch := e.changed
		e.mu.Unlock()
		if settled {
			return e.undelivered(nil, false)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return e.undelivered(ctx.Err(), false)
		}
	}
}

// undelivered builds the error of Flush and Close (nil when nothing remains).
func (e *Emitter) undelivered(ctxErr error, all bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.queue) == 0 && len(e.rejected) == 0 {
		return nil
	}
	if !all && ctxErr == nil && len(e.rejected) == 0 {
		return nil // later events are still on their way, which Flush does not wait for
	}
	events := make([]eai.UsageEvent, 0, len(e.queue)+len(e.rejected))
	for _, it := range e.queue {
		events = append(events, it.ev)
	}
	events = append(events, e.rejected...)
	err := e.lastErr
	if ctxErr != nil {
		if err != nil {
			err = fmt.Errorf("%w (last delivery error: %w)", ctxErr, err)
		} else {
			err = ctxErr
		}
	}
	return &UndeliveredError{Pending: len(e.queue), Rejected: len(e.rejected), Events: events, Err: err}
}

// Close stops taking events, sends what is queued (retrying transient failures) until it is delivered or ctx
// ends (without a deadline on ctx, Options.CloseTimeout applies), then stops the background goroutine. It
// returns nil when every event was delivered, else an *UndeliveredError holding the remaining events (also
// given by Pending and Rejected) so the caller can persist them. Calling it again returns the same result.
func (e *Emitter) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		err := e.closeErr
		e.mu.Unlock()
		return err
	}
	e.closing = true
	e.force = true
	e.mu.Unlock()
	e.wake()

	ctx, cancel := e.withDefaultTimeout(ctx)
	defer cancel()
	var ctxErr error
	for {
		e.mu.Lock()
		empty := len(e.queue) == 0
		ch := e.changed
		e.mu.Unlock()
		if empty {
			break
		}
		select {
		case <-ch:
			continue
		case <-ctx.Done():
			ctxErr = ctx.Err()
		}
		break
	}
	e.cancelSending()
	close(e.stop)
	<-e.done
	err := e.undelivered(ctxErr, true)
	e.mu.Lock()
	e.closed = true
	e.closeErr = err
	e.notify()
	e.mu.Unlock()
	return err
}

// run is the sending goroutine.
func (e *Emitter) run() {
	defer close(e.done)
	ticker := time.NewTicker(e.opts.FlushInterval)
	defer ticker.Stop()
	var retryAt time.Time
	var retryC <-chan time.Time
	failures := 0
	due := false
	for {
		e.mu.Lock()
		n := len(e.queue)
		if e.force {
			e.force = false
			retryAt = time.Time{}
		}
		urgent := e.flushWaiters > 0 || e.closing
		e.mu.Unlock()

		if n > 0 && !time.Now().Before(retryAt) && (n >= e.opts.BatchSize || urgent || due) {
			due = false
			if e.sendBatch() {
				failures = 0
				retryAt = time.Time{}
			} else {
				select {
				case <-e.stop:
					return
				default:
				}
				failures++
				wait := e.backoff(failures)
				retryAt = time.Now().Add(wait)
				retryC = time.After(wait)
			}
			continue
		}
		select {
		case <-e.kick:
		case <-ticker.C:
			due = true
		case <-retryC:
			retryC = nil
		case <-e.stop:
			return
		}
	}
}

func (e *Emitter) backoff(failures int) time.Duration {
	shift := failures - 1
	if shift > 20 {
		shift = 20
	}
	ceiling := e.opts.RetryBaseDelay << uint(shift)
	if ceiling > e.opts.RetryMaxDelay || ceiling <= 0 {
		ceiling = e.opts.RetryMaxDelay
	}
	return time.Duration(rand.Int63n(int64(ceiling) + 1))
}

// sendBatch delivers the head of the queue once: at most BatchSize events that name their tenant the same
// way (by slug, or not), since a request names one tenant in X-EAI-Tenant. It returns false after a
// transient failure (the batch stays at the head).
func (e *Emitter) sendBatch() bool {
	e.mu.Lock()
	k := len(e.queue)
	if k > e.opts.BatchSize {
		k = e.opts.BatchSize
	}
	for i := 1; i < k; i++ {
		if e.queue[i].ev.TenantSlug != e.queue[0].ev.TenantSlug {
			k = i
			break
		}
	}
	batch := make([]eai.UsageEvent, k)
	seqs := make([]uint64, k)
	for i := 0; i < k; i++ {
		batch[i] = e.queue[i].ev
		seqs[i] = e.queue[i].seq
	}
	e.mu.Unlock()
	if k == 0 {
		return true
	}

	_, err := e.client.Usage.Events(e.sendCtx, batch, e.opts.RequestOptions...)

	aborted := err != nil && e.sendCtx.Err() != nil // Close gave up: not a delivery failure of its own
	ok, refused := e.settle(err, batch, seqs, aborted)
	if err != nil && !aborted && e.opts.OnError != nil {
		if ok {
			e.opts.OnError(err, refused, false)
		} else {
			e.opts.OnError(err, batch, true)
		}
	}
	return ok
}

// settle records the outcome of a delivery: it returns false after a transient failure, and the events
// refused by the server, if any.
func (e *Emitter) settle(err error, batch []eai.UsageEvent, seqs []uint64, aborted bool) (bool, []eai.UsageEvent) {
	k := len(batch)
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.notify()
	e.stats.Requests++
	if err == nil {
		e.drop(seqs, nil)
		e.stats.Delivered += k
		return true, nil
	}
	if aborted {
		if e.lastErr == nil {
			e.lastErr = err
		}
		return false, nil
	}
	e.lastErr = err
	var apiErr *eai.APIError
	if !errors.As(err, &apiErr) || apiErr.Temporary() {
		e.stats.Failures++
		return false, nil
	}
	// Refused: never sent again. A 422 naming records rejects only those; the rest goes again at once.
	bad := map[int]bool{}
	if apiErr.Code == eai.CodeValidation {
		for _, d := range apiErr.Details {
			if d.Index != nil && *d.Index >= 0 && *d.Index < k {
				bad[*d.Index] = true
			}
		}
	}
	if len(bad) == 0 {
		for i := 0; i < k; i++ {
			bad[i] = true
		}
	}
	var refused []eai.UsageEvent
	for i := 0; i < k; i++ {
		if bad[i] {
			refused = append(refused, batch[i])
		}
	}
	e.drop(seqs, bad)
	e.rejected = append(e.rejected, refused...)
	e.stats.Rejected += len(refused)
	return true, refused
}

// drop removes from the queue the events of seqs (all, or those at the indexes in only); e.mu is held.
func (e *Emitter) drop(seqs []uint64, only map[int]bool) {
	remove := make(map[uint64]bool, len(seqs))
	for i, s := range seqs {
		if only == nil || only[i] {
			remove[s] = true
		}
	}
	kept := e.queue[:0]
	for _, it := range e.queue {
		if !remove[it.seq] {
			kept = append(kept, it)
		}
	}
	for i := len(kept); i < len(e.queue); i++ {
		e.queue[i] = item{}
	}
	e.queue = kept
}
