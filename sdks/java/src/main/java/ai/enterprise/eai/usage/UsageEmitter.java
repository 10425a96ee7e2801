package ai.enterprise.eai.usage;

import ai.enterprise.eai.ApiConnectionException;
import ai.enterprise.eai.EnterpriseAIClient;
import ai.enterprise.eai.EnterpriseAIException;
import ai.enterprise.eai.FieldError;
import ai.enterprise.eai.IngestOptions;
import ai.enterprise.eai.InvalidResponseException;
import ai.enterprise.eai.RateLimitException;
import ai.enterprise.eai.ValidationException;
import ai.enterprise.eai.model.UsageEvent;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Batches usage events in a background thread and delivers them to {@code POST /v1/usage/events} at least once.
 *
 * <pre>{@code
 * try (UsageEmitter emitter = UsageEmitter.builder(client)
 *         .defaults(Map.of("source", "worker", "usage_type", "llm_tokens"))
 *         .build()) {
 *     emitter.emit(Map.of("deployment_id", "vllm-llama-70b", "units", Map.of("tokens_in", 812, "tokens_out", 97)));
 * } // close() flushes: every event is delivered (or close's timeout passed and the loss is logged)
 * }</pre>
 *
 * <p><b>Delivery</b> is at least once with stable ids: {@code emit} gives each event its {@code event_id} (a
 * random UUID, unless it has one) at once, so a re-sent event replaces the stored one and never doubles. A batch
 * that fails for a transient reason (connection, timeout, 429, 5xx) stays at the head of the queue and is sent
 * again, same ids, after a backoff, for as long as the emitter is open. A batch the server refuses (422 and
 * other 4xx) is never retried: with a 422 naming records only those are dropped and the rest is sent again;
 * otherwise the batch is dropped. Either way the {@link ErrorHandler} is called and the events are counted in
 * {@link Stats#failed()}.
 *
 * <p><b>Queue</b>: at most {@code maxQueueSize} events wait (the batch in flight included). When it is full,
 * {@link OnFull} decides: {@code BLOCK} (default) waits up to {@code blockTimeout} for room then throws
 * {@link QueueFullException}; {@code THROW} throws at once; {@code RETURN_FALSE} makes {@link #emit(Map)} return
 * false. An event is never dropped silently: every event refused by a full queue is the caller's to handle, and
 * is counted in {@link Stats#rejected()}. Events are held in memory only: call {@link #close()} (or use
 * try-with-resources) before the process exits; {@link #pendingEvents()} gives what is still queued.
 *
 * <p>Thread-safe: any number of threads may emit.
 */
public final class UsageEmitter implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("ai.enterprise.eai.usage");
    private static final ObjectMapper PLAIN = new ObjectMapper();
    private static final List<String> REQUIRED = List.of("usage_type", "source", "units");

    /** What {@link #emit(Map)} does when the queue is full. */
    public enum OnFull {
        /** Wait up to {@code blockTimeout} for room, then throw {@link QueueFullException}. */
        BLOCK,
        /** Throw {@link QueueFullException} at once. */
        THROW,
        /** Return false at once (the event is not queued). */
        RETURN_FALSE
    }

    /** Called, from the emitter's thread, with the error and the events the server refused. */
    @FunctionalInterface
    public interface ErrorHandler {
        /**
         * Reports refused events (they are not sent again).
         *
         * @param error why (a {@link ValidationException}, a {@link ai.enterprise.eai.PermissionDeniedException},
         *     ...)
         * @param events the refused events, as sent
         */
        void onError(RuntimeException error, List<Map<String, Object>> events);
    }

    /**
     * Counters of an emitter (events unless said otherwise).
     *
     * @param emitted queued by {@code emit}
     * @param delivered acknowledged by the server
     * @param failed refused by the server (never retried; reported to the {@link ErrorHandler})
     * @param rejected refused by {@code emit} because the queue was full
     * @param pending waiting in the queue (the batch in flight included)
     * @param requests successful ingest requests
     * @param retries batches sent again after a transient failure
     */
    public record Stats(
            long emitted, long delivered, long failed, long rejected, long pending, long requests, long retries) {}

    /** The queue is full ({@link OnFull#THROW}, or {@link OnFull#BLOCK} past its timeout): the event was not queued. */
    public static final class QueueFullException extends IllegalStateException {
        /**
         * Makes the exception.
         *
         * @param message what happened
         */
        public QueueFullException(String message) {
            super(message);
        }
    }

    /** How long an event waits for its batch by default (behaviour.json {@code flush_interval_seconds}). */
    public static final Duration DEFAULT_FLUSH_INTERVAL = Duration.ofSeconds(1);
    /** Events waiting at most by default (behaviour.json {@code usage_max_queue}). */
    public static final int DEFAULT_MAX_QUEUE_SIZE = 10_000;

    private final EnterpriseAIClient client;
    private final int batchSize;
    private final long flushIntervalNanos;
    private final int maxQueueSize;
    private final OnFull onFull;
    private final Duration blockTimeout;
    private final Duration closeTimeout;
    private final Duration retryBaseDelay;
    private final Duration retryMaxDelay;
    private final Map<String, Object> defaults;
    private final ErrorHandler onError;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final ArrayDeque<ObjectNode> queue = new ArrayDeque<>();
    private long oldestAt; // System.nanoTime() when the head event was queued, or earlier (0: queue empty)
    private long emitted;
    private long resolved; // delivered + failed: events that left the queue, in order
    private long delivered;
    private long failed;
    private long rejected;
    private long requests;
    private long retries;
    private int flushWaiters;
    private boolean closing;
    private boolean stopped;
    private final Thread worker;
    /** Flushes what is still queued when the JVM exits (unsent events are not lost on a normal exit). */
    private final Thread exitHook;

    private UsageEmitter(Builder b) {
        this.client = b.client;
        this.batchSize = b.batchSize;
        this.flushIntervalNanos = b.flushInterval.toNanos();
        this.maxQueueSize = b.maxQueueSize;
        this.onFull = b.onFull;
        this.blockTimeout = b.blockTimeout;
        this.closeTimeout = b.closeTimeout;
        this.retryBaseDelay = b.retryBaseDelay;
        this.retryMaxDelay = b.retryMaxDelay;
        this.defaults = Map.copyOf(b.defaults);
        this.onError = b.onError;
        this.worker = new Thread(this::run, "eai-usage-emitter");
        this.worker.setDaemon(true);
        this.worker.start();
        this.exitHook = new Thread(() -> close(closeTimeout), "eai-usage-emitter-exit");
        Runtime.getRuntime().addShutdownHook(exitHook);
    }

    /**
     * How long an event waits for its batch at most.
     *
     * @return the flush interval (default 1 s)
     */
    public Duration flushInterval() {
        return Duration.ofNanos(flushIntervalNanos);
    }

    /**
     * Events that may wait at most (the batch in flight included).
     *
     * @return the queue's size (default 10,000)
     */
    public int maxQueueSize() {
        return maxQueueSize;
    }

    /**
     * A builder of an emitter that sends with {@code client} (not closed by the emitter). The client's key must
     * be allowed to ingest usage: a tenant's tenant_admin or developer, or usage_reporter / platform_admin
     * (then every event needs {@code tenant_id}: put it in {@code defaults} or in each event).
     *
     * @param client the client
     * @return a builder
     */
    public static Builder builder(EnterpriseAIClient client) {
        return new Builder(client);
    }

    // ------------------------------------------------------------------------------------------------ emit

    /**
     * Queues one usage event; never waits for the network.
     *
     * <p>The event is the builder's {@code defaults} overridden by {@code event}; {@code event_id} (a random UUID),
     * {@code schema_version} and {@code occurred_at} (now) are set here when absent, so every retry reuses them.
     * {@code usage_type}, {@code source} and {@code units} are required.
     *
     * @param event the event's members ({@code deployment_id}, {@code units}, ...)
     * @return true when queued; false when the queue is full and the policy is {@link OnFull#RETURN_FALSE}
     * @throws QueueFullException when the queue is full ({@link OnFull#THROW}, {@link OnFull#BLOCK} past its
     *     timeout)
     * @throws IllegalArgumentException when a required member is missing
     * @throws IllegalStateException after {@link #close()}
     */
    public boolean emit(Map<String, ?> event) {
        return enqueue(event);
    }

    /**
     * Queues one typed usage event; see {@link #emit(Map)}.
     *
     * @param event the event
     * @return true when queued; false when the queue is full and the policy is {@link OnFull#RETURN_FALSE}
     * @throws QueueFullException when the queue is full ({@link OnFull#THROW}, {@link OnFull#BLOCK})
     * @throws IllegalStateException after {@link #close()}
     */
    public boolean emit(UsageEvent event) {
        return enqueue(event);
    }

    private boolean enqueue(Object event) {
        Objects.requireNonNull(event, "event");
        ObjectNode record = client.usage().prepareEvent(event, defaults);
        List<String> missing = new ArrayList<>();
        for (String k : REQUIRED) {
            if (!record.hasNonNull(k)) {
                missing.add(k);
            }
        }
        if (!missing.isEmpty()) {
            throw new IllegalArgumentException("usage event without " + String.join(", ", missing));
        }
        lock.lock();
        try {
            if (closing || stopped) {
                throw new IllegalStateException("this UsageEmitter is closed");
            }
            if (queue.size() >= maxQueueSize) {
                if (onFull == OnFull.BLOCK) {
                    long left = blockTimeout.toNanos();
                    while (queue.size() >= maxQueueSize && left > 0 && !closing && !stopped) {
                        try {
                            left = changed.awaitNanos(left);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            break;
                        }
                    }
                    if (closing || stopped) {
                        throw new IllegalStateException("this UsageEmitter is closed");
                    }
                }
                if (queue.size() >= maxQueueSize) {
                    rejected++;
                    if (onFull == OnFull.RETURN_FALSE) {
                        return false;
                    }
                    throw new QueueFullException("the usage emitter's queue is full (" + maxQueueSize
                            + " events waiting): the event was not queued");
                }
            }
            if (queue.isEmpty()) {
                oldestAt = System.nanoTime();
            }
            queue.addLast(record);
            emitted++;
            if (queue.size() >= batchSize) {
                changed.signalAll();
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    // ----------------------------------------------------------------------------------------------- flush

    /**
     * Sends every event queued before this call now and waits until each is delivered or refused, up to the
     * builder's {@code closeTimeout}.
     *
     * @return true when they all left the queue; false when the timeout passed first (they stay queued)
     */
    public boolean flush() {
        return flush(closeTimeout);
    }

    /**
     * Sends every event queued before this call now and waits until each is delivered or refused.
     *
     * @param timeout how long to wait at most
     * @return true when they all left the queue; false when the timeout passed first (they stay queued)
     */
    public boolean flush(Duration timeout) {
        lock.lock();
        try {
            long target = emitted;
            long left = timeout.toNanos();
            flushWaiters++;
            changed.signalAll();
            try {
                while (resolved < target && !stopped) {
                    if (left <= 0) {
                        return false;
                    }
                    left = changed.awaitNanos(left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            } finally {
                flushWaiters--;
            }
            return resolved >= target;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Flushes (up to the builder's {@code closeTimeout}) and stops the emitter; later {@code emit}s throw.
     * Events still queued after the timeout are logged and kept in {@link #pendingEvents()}. Idempotent.
     */
    @Override
    public void close() {
        close(closeTimeout);
    }

    /**
     * Flushes (up to {@code timeout}) and stops the emitter; see {@link #close()}.
     *
     * @param timeout how long to wait for delivery at most
     * @return true when every event was delivered or refused; false when some are still queued
     */
    public boolean close(Duration timeout) {
        if (Thread.currentThread() != exitHook) {
            try {
                Runtime.getRuntime().removeShutdownHook(exitHook);
            } catch (IllegalStateException exiting) {
                // the JVM is exiting: the hook runs (or ran) close itself
            }
        }
        boolean done;
        lock.lock();
        try {
            closing = true;
            changed.signalAll();
            long left = timeout.toNanos();
            try {
                while (!queue.isEmpty() && !stopped && left > 0) {
                    left = changed.awaitNanos(left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            done = queue.isEmpty();
            stopped = true;
            changed.signalAll();
            if (!done) {
                LOG.log(System.Logger.Level.WARNING,
                        "eai-sdk: the usage emitter closed with {0} event(s) undelivered (see pendingEvents())",
                        String.valueOf(queue.size()));
            }
        } finally {
            lock.unlock();
        }
        if (Thread.currentThread() != worker) {
            worker.interrupt();
            try {
                worker.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return done;
    }

    /**
     * The emitter's counters.
     *
     * @return a snapshot
     */
    public Stats stats() {
        lock.lock();
        try {
            return new Stats(emitted, delivered, failed, rejected, queue.size(), requests, retries);
        } finally {
            lock.unlock();
        }
    }

    /**
     * The events still queued, oldest first, as they will be sent (with their ids): to persist them yourself
     * after a {@code close} that timed out.
     *
     * @return copies of the queued events
     */
    public List<Map<String, Object>> pendingEvents() {
        lock.lock();
        try {
            return asMaps(new ArrayList<>(queue));
        } finally {
            lock.unlock();
        }
    }

    private static List<Map<String, Object>> asMaps(List<ObjectNode> nodes) {
        List<Map<String, Object>> out = new ArrayList<>(nodes.size());
        for (ObjectNode n : nodes) {
            out.add(PLAIN.convertValue(n, new TypeReference<LinkedHashMap<String, Object>>() {}));
        }
        return out;
    }

    // ---------------------------------------------------------------------------------------------- worker

    private void run() {
        int failures = 0;
        while (true) {
            List<ObjectNode> batch;
            lock.lock();
            try {
                if (!awaitBatch()) {
                    return;
                }
                batch = new ArrayList<>(Math.min(batchSize, queue.size()));
                for (ObjectNode n : queue) {
                    if (batch.size() >= batchSize) {
                        break;
                    }
                    batch.add(n);
                }
            } finally {
                lock.unlock();
            }
            RuntimeException error = null;
            try {
                client.usage().events(batch, IngestOptions.defaults().withBatchSize(batchSize));
            } catch (RuntimeException e) {
                error = e;
            }
            lock.lock();
            try {
                if (error == null) {
                    removeHead(batch.size());
                    delivered += batch.size();
                    requests++;
                    failures = 0;
                    changed.signalAll();
                    continue;
                }
                if (isTransient(error)) {
                    if (stopped) {
                        return;
                    }
                    retries++;
                    failures++;
                    long wait = backoffNanos(failures);
                    LOG.log(System.Logger.Level.WARNING,
                            "eai-sdk: usage emitter: a batch of {0} failed ({1}); sending it again in {2} ms",
                            String.valueOf(batch.size()), error,
                            String.valueOf(TimeUnit.NANOSECONDS.toMillis(wait)));
                    try {
                        while (wait > 0 && !stopped) {
                            wait = changed.awaitNanos(wait);
                        }
                    } catch (InterruptedException e) {
                        if (stopped) {
                            return;
                        }
                    }
                    continue;
                }
                failures = 0;
                List<ObjectNode> refused = refuse(batch, error);
                changed.signalAll();
                lock.unlock();
                try {
                    report(error, refused);
                } finally {
                    lock.lock();
                }
            } finally {
                lock.unlock();
            }
        }
    }

    /** Waits (lock held) until a batch should go; false when the emitter is to stop. */
    private boolean awaitBatch() {
        while (true) {
            if (stopped) {
                return false;
            }
            if (queue.isEmpty()) {
                if (closing) {
                    return false;
                }
                awaitQuietly(0);
                continue;
            }
            long age = System.nanoTime() - oldestAt;
            if (queue.size() >= batchSize || closing || flushWaiters > 0 || age >= flushIntervalNanos) {
                return true;
            }
            awaitQuietly(flushIntervalNanos - age);
        }
    }

    private void awaitQuietly(long nanos) {
        try {
            if (nanos <= 0) {
                changed.await();
            } else {
                changed.awaitNanos(nanos);
            }
        } catch (InterruptedException e) {
            // close() interrupts to stop; the loop re-checks `stopped`
        }
    }

    private void removeHead(int n) {
        for (int i = 0; i < n; i++) {
            queue.pollFirst();
        }
        resolved += n;
        if (queue.isEmpty()) {
            oldestAt = 0;
        }
        // else: the new head was queued after the old one: keeping the old instant only sends it sooner
    }

    /** Drops what the server refused (lock held): the indexed records of a 422, else the whole batch. */
    private List<ObjectNode> refuse(List<ObjectNode> batch, RuntimeException error) {
        Set<Integer> bad = new HashSet<>();
        if (error instanceof ValidationException v) {
            for (FieldError d : v.getDetails()) {
                if (d.index() != null && d.index() >= 0 && d.index() < batch.size()) {
                    bad.add(d.index());
                } else {
                    bad.clear();
                    break;
                }
            }
        }
        List<ObjectNode> refused = new ArrayList<>();
        List<ObjectNode> kept = new ArrayList<>();
        for (int i = 0; i < batch.size(); i++) {
            if (bad.isEmpty() || bad.contains(i)) {
                refused.add(batch.get(i));
            } else {
                kept.add(batch.get(i));
            }
        }
        for (int i = 0; i < batch.size(); i++) {
            queue.pollFirst();
        }
        for (int i = kept.size() - 1; i >= 0; i--) {
            queue.addFirst(kept.get(i));
        }
        // Kept events are still pending: the resolved counter moves by the refused ones only.
        resolved += refused.size();
        failed += refused.size();
        if (queue.isEmpty()) {
            oldestAt = 0;
        }
        return refused;
    }

    private void report(RuntimeException error, List<ObjectNode> refused) {
        LOG.log(System.Logger.Level.ERROR, "eai-sdk: usage emitter: the server refused {0} event(s): {1}",
                String.valueOf(refused.size()), error);
        if (onError != null) {
            try {
                onError.onError(error, asMaps(refused));
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.ERROR, "eai-sdk: usage emitter: the error handler failed", e);
            }
        }
    }

    private static boolean isTransient(RuntimeException e) {
        if (e instanceof ApiConnectionException || e instanceof RateLimitException
                || e instanceof InvalidResponseException) {
            return true;
        }
        return e instanceof EnterpriseAIException x && x.getStatus() >= 500;
    }

    private long backoffNanos(int failures) {
        long base = retryBaseDelay.toNanos();
        long cap = Math.min(retryMaxDelay.toNanos(), base * (1L << Math.min(failures - 1, 20)));
        return cap <= 0 ? 0 : ThreadLocalRandom.current().nextLong(cap + 1);
    }

    @Override
    public String toString() {
        return "UsageEmitter{" + stats() + ", client=" + client + "}";
    }

    // --------------------------------------------------------------------------------------------- builder

    /** Configures a {@link UsageEmitter}. */
    public static final class Builder {
        private final EnterpriseAIClient client;
        private int batchSize = 500;
        private Duration flushInterval = DEFAULT_FLUSH_INTERVAL;
        private int maxQueueSize = DEFAULT_MAX_QUEUE_SIZE;
        private OnFull onFull = OnFull.BLOCK;
        private Duration blockTimeout = Duration.ofSeconds(30);
        private Duration closeTimeout = Duration.ofSeconds(30);
        private Duration retryBaseDelay = Duration.ofMillis(500);
        private Duration retryMaxDelay = Duration.ofSeconds(30);
        private final Map<String, Object> defaults = new LinkedHashMap<>();
        private ErrorHandler onError;

        private Builder(EnterpriseAIClient client) {
            this.client = Objects.requireNonNull(client, "client");
        }

        /**
         * Events per request at most (default 500).
         *
         * @param n 1 or more
         * @return this builder
         */
        public Builder batchSize(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("batchSize must be >= 1");
            }
            batchSize = n;
            return this;
        }

        /**
         * How long an event may wait for its batch to fill (default 1 s).
         *
         * @param d a positive duration
         * @return this builder
         */
        public Builder flushInterval(Duration d) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("flushInterval must be positive");
            }
            flushInterval = d;
            return this;
        }

        /**
         * Events waiting at most, the batch in flight included (default 10,000); see {@link #onFull}.
         *
         * @param n at least 1
         * @return this builder
         */
        public Builder maxQueueSize(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxQueueSize must be >= 1");
            }
            maxQueueSize = n;
            return this;
        }

        /**
         * What {@code emit} does when the queue is full (default {@link OnFull#BLOCK}).
         *
         * @param policy the policy
         * @return this builder
         */
        public Builder onFull(OnFull policy) {
            onFull = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * How long {@link OnFull#BLOCK} waits for room before throwing (default 30 s).
         *
         * @param d 0 or more
         * @return this builder
         */
        public Builder blockTimeout(Duration d) {
            if (d == null || d.isNegative()) {
                throw new IllegalArgumentException("blockTimeout must be >= 0");
            }
            blockTimeout = d;
            return this;
        }

        /**
         * How long {@link UsageEmitter#close()} and {@link UsageEmitter#flush()} wait for delivery (default 30 s).
         *
         * @param d 0 or more
         * @return this builder
         */
        public Builder closeTimeout(Duration d) {
            if (d == null || d.isNegative()) {
                throw new IllegalArgumentException("closeTimeout must be >= 0");
            }
            closeTimeout = d;
            return this;
        }

        /**
         * The emitter's backoff between failed deliveries of a batch (full jitter; defaults 0.5 s and 30 s), on top
         * of the client's own retries.
         *
         * @param base the first cap
         * @param max the largest cap
         * @return this builder
         */
        public Builder retryBackoff(Duration base, Duration max) {
            if (base == null || max == null || base.isNegative() || max.isNegative()) {
                throw new IllegalArgumentException("retry delays must be >= 0");
            }
            retryBaseDelay = base;
            retryMaxDelay = max;
            return this;
        }

        /**
         * Members merged under every event, e.g. {@code source}, {@code usage_type}, {@code tenant_id}.
         *
         * @param members the defaults
         * @return this builder
         */
        public Builder defaults(Map<String, ?> members) {
            defaults.clear();
            defaults.putAll(Objects.requireNonNull(members, "members"));
            return this;
        }

        /**
         * Called with the events the server refused (default: logged only).
         *
         * @param handler the handler, called from the emitter's thread
         * @return this builder
         */
        public Builder onError(ErrorHandler handler) {
            onError = handler;
            return this;
        }

        /**
         * Builds and starts the emitter (one daemon thread).
         *
         * @return the emitter
         */
        public UsageEmitter build() {
            if (maxQueueSize < batchSize) {
                throw new IllegalArgumentException("maxQueueSize must be >= batchSize");
            }
            return new UsageEmitter(this);
        }
    }
}
