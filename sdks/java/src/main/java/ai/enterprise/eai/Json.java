package ai.enterprise.eai;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.io.IOException;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.YearMonth;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.Date;

/**
 * JSON on the wire: exact decimals both ways, RFC 3339 instants with millisecond precision.
 *
 * <p>Writing: a {@code BigDecimal} is a JSON number in plain notation (never {@code 1E+3}); a {@code Double} or
 * {@code Float} goes through its shortest decimal form ({@code 2.10} is sent as {@code 2.1}, never
 * {@code 2.100000000000000088817841970012523233890533447265625}); an {@code Instant},
 * {@code OffsetDateTime} or {@code ZonedDateTime} is {@code 2026-10-01T00:00:15.000Z} (UTC, milliseconds); a
 * {@code LocalDate} is {@code 2026-10-01}. A {@code LocalDateTime} names no instant and is refused.
 *
 * <p>Reading: every number with a fraction is a {@code BigDecimal} holding the digits the server wrote; unknown
 * members are ignored.
 */
final class Json {

    private static final DateTimeFormatter INSTANT =
            DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

    static final ObjectMapper MAPPER = JsonMapper.builder()
            .addModule(new JavaTimeModule())
            .addModule(sdkModule())
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
            .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .disable(DeserializationFeature.ADJUST_DATES_TO_CONTEXT_TIME_ZONE)
            .enable(StreamWriteFeature.WRITE_BIGDECIMAL_AS_PLAIN)
            .disable(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES)
            .build();

    private Json() {}

    /** An instant as the API writes it: UTC, milliseconds ({@code 2026-10-01T00:00:15.000Z}). */
    static String formatInstant(Instant instant) {
        return INSTANT.format(instant.truncatedTo(ChronoUnit.MILLIS));
    }

    /** Now, as {@link #formatInstant}. */
    static String now() {
        return formatInstant(Instant.now());
    }

    /** The exact decimal of a double: its shortest representation ({@code 2.10} is 2.1). */
    static BigDecimal decimal(double d) {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            throw new IllegalArgumentException("cannot send a non-finite number: " + d);
        }
        return shortest(BigDecimal.valueOf(d));
    }

    /** Without trailing zeros ({@code 15.0} is 15, {@code 1.0E-7} is 0.0000001), never a negative scale. */
    private static BigDecimal shortest(BigDecimal b) {
        BigDecimal s = b.stripTrailingZeros();
        return s.scale() < 0 ? s.setScale(0) : s;
    }

    /** The exact decimal of a float: its shortest representation ({@code 2.1f} is 2.1). */
    static BigDecimal decimal(float f) {
        if (Float.isNaN(f) || Float.isInfinite(f)) {
            throw new IllegalArgumentException("cannot send a non-finite number: " + f);
        }
        return shortest(new BigDecimal(Float.toString(f)));
    }

    /**
     * A query parameter's text: a {@code String} as given, a {@code LocalDate} as {@code YYYY-MM-DD}, an instant
     * as {@link #formatInstant}, a number in plain notation.
     */
    static String formatParam(String name, Object value) {
        if (value instanceof String s) {
            if (s.isEmpty()) {
                throw new IllegalArgumentException(name + " must not be empty");
            }
            return s;
        }
        if (value instanceof Instant i) {
            return formatInstant(i);
        }
        if (value instanceof OffsetDateTime o) {
            return formatInstant(o.toInstant());
        }
        if (value instanceof ZonedDateTime z) {
            return formatInstant(z.toInstant());
        }
        if (value instanceof Date d) {
            return formatInstant(d.toInstant());
        }
        if (value instanceof LocalDate d) {
            return d.toString();
        }
        if (value instanceof YearMonth m) {
            return m.toString();
        }
        if (value instanceof LocalDateTime) {
            throw new IllegalArgumentException(
                    name + ": a LocalDateTime names no instant; give an Instant, an OffsetDateTime or a LocalDate");
        }
        if (value instanceof BigDecimal b) {
            return b.toPlainString();
        }
        if (value instanceof Double d) {
            return decimal(d).toPlainString();
        }
        if (value instanceof Float f) {
            return decimal(f).toPlainString();
        }
        if (value instanceof Number || value instanceof Boolean) {
            return value.toString();
        }
        throw new IllegalArgumentException(
                name + " must be a String, a LocalDate, a YearMonth, an Instant, an OffsetDateTime or a number, not "
                        + value.getClass().getName());
    }

    /** A payload as a JSON tree, through the SDK's serializers. */
    static JsonNode toTree(Object value) {
        try {
            return MAPPER.valueToTree(value);
        } catch (IllegalArgumentException e) {
            Throwable cause = e.getCause() instanceof IllegalArgumentException iae ? iae : e;
            throw new IllegalArgumentException("cannot encode the request: " + cause.getMessage(), e);
        }
    }

    /** A request body: compact UTF-8 JSON. */
    static byte[] encode(Object value) {
        try {
            return MAPPER.writeValueAsBytes(value);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot encode the request: " + e.getMessage(), e);
        }
    }

    private static SimpleModule sdkModule() {
        SimpleModule m = new SimpleModule("eai-sdk");
        JsonSerializer<Double> dbl = new JsonSerializer<>() {
            @Override
            public void serialize(Double value, JsonGenerator gen, SerializerProvider serializers)
                    throws IOException {
                gen.writeNumber(decimal(value));
            }
        };
        JsonSerializer<Float> flt = new JsonSerializer<>() {
            @Override
            public void serialize(Float value, JsonGenerator gen, SerializerProvider serializers)
                    throws IOException {
                gen.writeNumber(decimal(value));
            }
        };
        m.addSerializer(Double.class, dbl);
        m.addSerializer(Double.TYPE, dbl);
        m.addSerializer(Float.class, flt);
        m.addSerializer(Float.TYPE, flt);
        m.addSerializer(Instant.class, new JsonSerializer<>() {
            @Override
            public void serialize(Instant value, JsonGenerator gen, SerializerProvider serializers)
                    throws IOException {
                gen.writeString(formatInstant(value));
            }
        });
        m.addSerializer(OffsetDateTime.class, new JsonSerializer<>() {
            @Override
            public void serialize(OffsetDateTime value, JsonGenerator gen, SerializerProvider serializers)
                    throws IOException {
                gen.writeString(formatInstant(value.toInstant()));
            }
        });
        m.addSerializer(ZonedDateTime.class, new JsonSerializer<>() {
            @Override
            public void serialize(ZonedDateTime value, JsonGenerator gen, SerializerProvider serializers)
                    throws IOException {
                gen.writeString(formatInstant(value.toInstant()));
            }
        });
        m.addSerializer(LocalDateTime.class, new JsonSerializer<>() {
            @Override
            public void serialize(LocalDateTime value, JsonGenerator gen, SerializerProvider serializers) {
                throw new IllegalArgumentException(
                        "a LocalDateTime names no instant; give an Instant, an OffsetDateTime or a LocalDate");
            }
        });
        return m;
    }
}
