package ai.enterprise.eai;

import java.time.Duration;

/**
 * Told about every attempt of every call ({@link EnterpriseAIClient.Builder#listener(RequestListener)}): for
 * logging and metrics. Called on the calling thread; it must be quick and must not throw. It never sees the API
 * key, the headers nor the bodies.
 */
@FunctionalInterface
public interface RequestListener {

    /**
     * One attempt ended.
     *
     * @param attempt what happened
     */
    void onAttempt(Attempt attempt);

    /**
     * One attempt of a call.
     *
     * @param method the HTTP method
     * @param path the path (no query string)
     * @param attempt 1 for the first attempt, 2 for the first retry...
     * @param status the answer's HTTP status, 0 when none came (connection failure, timeout)
     * @param errorCode the error's code ({@code unavailable}, {@code timeout}...), {@code null} on success
     * @param requestId the answer's {@code X-Request-Id}, or {@code null}
     * @param elapsed how long the attempt took
     * @param retryIn the wait before the next attempt, {@code null} when there is none
     */
    record Attempt(String method, String path, int attempt, int status, String errorCode, String requestId,
            Duration elapsed, Duration retryIn) {}
}
