package ai.enterprise.eai;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpHeaders;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Error answers into exceptions: one class per contract code, a class per status for unknown codes. */
final class Errors {

    private Errors() {}

    static EnterpriseAIException fromResponse(int status, HttpHeaders headers, byte[] body) {
        String headerRequestId = headers.firstValue("x-request-id").orElse(null);
        Duration retryAfter = parseRetryAfter(headers.firstValue("retry-after").orElse(null), Instant.now());
        JsonNode error = null;
        if (body != null && body.length > 0) {
            try {
                JsonNode root = Json.MAPPER.readTree(body);
                if (root != null && root.path("error").isObject()) {
                    error = root.get("error");
                }
            } catch (java.io.IOException ignored) {
                // not JSON: a proxy's page; described below
            }
        }
        String code;
        String message;
        Map<String, String> i18n = new LinkedHashMap<>();
        List<FieldError> details = new ArrayList<>();
        String requestId = headerRequestId;
        if (error != null) {
            code = textOr(error.get("code"), defaultCode(status));
            message = textOr(error.get("message"), "HTTP " + status);
            JsonNode m = error.get("message_i18n");
            if (m != null && m.isObject()) {
                m.fields().forEachRemaining(e -> {
                    if (e.getValue().isTextual()) {
                        i18n.put(e.getKey(), e.getValue().asText());
                    }
                });
            }
            JsonNode d = error.get("details");
            if (d != null && d.isArray()) {
                for (JsonNode item : d) {
                    JsonNode index = item.get("index");
                    details.add(new FieldError(
                            index != null && index.canConvertToInt() && index.isIntegralNumber() ? index.asInt() : null,
                            textOr(item.get("field"), "?"),
                            textOr(item.get("reason"), "")));
                }
            }
            requestId = textOr(error.get("request_id"), headerRequestId);
        } else {
            code = null;
            String text = body == null ? "" : new String(body, StandardCharsets.UTF_8).strip();
            if (text.length() > 200) {
                text = text.substring(0, 200) + "...";
            }
            message = "HTTP " + status + (text.isEmpty() ? "" : ": " + text);
        }
        EnterpriseAIException e = make(status, code, message, i18n, details, requestId, retryAfter);
        e.attachBody(body == null ? "" : new String(body, StandardCharsets.UTF_8));
        return e;
    }

    /** Makes an exception of the constructor's signature. */
    @FunctionalInterface
    private interface Ctor {
        EnterpriseAIException make(
                int status,
                String code,
                String message,
                Map<String, String> i18n,
                List<FieldError> details,
                String requestId,
                Duration retryAfter);
    }

    private static Ctor ctorOf(String code) {
        switch (code) {
            case "unauthorized":
                return AuthenticationException::new;
            case "forbidden":
                return PermissionDeniedException::new;
            case "tenant_required":
                return TenantRequiredException::new;
            case "not_found":
                return NotFoundException::new;
            case "method_not_allowed":
                return MethodNotAllowedException::new;
            case "payload_too_large":
                return PayloadTooLargeException::new;
            case "conflict":
            case "idempotency_key_in_flight":
                return ConflictException::new;
            case "idempotency_key_reused":
                return IdempotencyKeyReusedException::new;
            case "validation_error":
                return ValidationException::new;
            case "rate_limited":
                return RateLimitException::new;
            case "internal":
                return InternalServerException::new;
            case "unavailable":
                return ServiceUnavailableException::new;
            case "budget_exceeded":
                return BudgetExceededException::new;
            default:
                return null;
        }
    }

    /**
     * The exception of a code (behaviour.json {@code error_kinds}); a code this SDK does not know, or an answer
     * without the envelope, is the base class {@link EnterpriseAIException} (kind {@code api_error}), keeping the
     * status, the code as sent, the message and the request id.
     */
    static EnterpriseAIException make(
            int status,
            String code,
            String message,
            Map<String, String> i18n,
            List<FieldError> details,
            String requestId,
            Duration retryAfter) {
        Ctor ctor = code == null ? null : ctorOf(code);
        if (ctor == null) {
            return new EnterpriseAIException(status, code, message, i18n, details, requestId, retryAfter, null);
        }
        return ctor.make(status, code, message, i18n, details, requestId, retryAfter);
    }

    /** The contract's code of a status, for answers without an envelope. */
    static String defaultCode(int status) {
        switch (status) {
            case 401:
                return "unauthorized";
            case 402:
                return "budget_exceeded";
            case 403:
                return "forbidden";
            case 404:
                return "not_found";
            case 405:
                return "method_not_allowed";
            case 409:
                return "conflict";
            case 413:
                return "payload_too_large";
            case 422:
                return "validation_error";
            case 429:
                return "rate_limited";
            case 503:
                return "unavailable";
            default:
                return status >= 500 ? "internal" : "error";
        }
    }

    /** {@code Retry-After}: seconds (decimals tolerated) or an HTTP date; {@code null} when absent or unreadable. */
    static Duration parseRetryAfter(String value, Instant now) {
        if (value == null || value.isBlank()) {
            return null;
        }
        String v = value.strip();
        try {
            double seconds = Double.parseDouble(v);
            if (Double.isNaN(seconds) || Double.isInfinite(seconds) || seconds < 0) {
                return null;
            }
            return Duration.ofMillis(Math.round(seconds * 1000));
        } catch (NumberFormatException notANumber) {
            try {
                Instant at = ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
                Duration d = Duration.between(now, at);
                return d.isNegative() ? Duration.ZERO : d;
            } catch (DateTimeParseException notADate) {
                return null;
            }
        }
    }

    private static String textOr(JsonNode node, String fallback) {
        return node != null && node.isTextual() && !node.asText().isEmpty() ? node.asText() : fallback;
    }
}
