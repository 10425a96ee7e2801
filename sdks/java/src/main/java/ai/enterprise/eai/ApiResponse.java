package ai.enterprise.eai;

import java.net.http.HttpHeaders;

/**
 * A result with the HTTP answer it came from ({@link EnterpriseAIClient#withRawResponse}).
 *
 * @param data the parsed result, as the wrapped call returns it
 * @param requestId the {@code X-Request-Id} of the (last) answer, or {@code null} when the server sent none
 * @param status the HTTP status of the (last) answer
 * @param headers the headers of the (last) answer
 * @param requests how many HTTP requests succeeded inside the call (a batched ingest makes several)
 * @param <T> the result's type
 */
public record ApiResponse<T>(T data, String requestId, int status, HttpHeaders headers, int requests) {}
