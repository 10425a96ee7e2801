package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.GpuSample;
import ai.enterprise.eai.model.Money;
import ai.enterprise.eai.model.UsageEvent;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The wire format, without a server: exact decimals, instants, error mapping, redaction. */
class JsonTest {

    private static String json(Object o) {
        return new String(Json.encode(o), StandardCharsets.UTF_8);
    }

    @Test
    void doublesTravelAsTheirShortestDecimal() {
        assertEquals("{\"gpu_hourly_cost\":2.1}", json(Map.of("gpu_hourly_cost", 2.10)));
        assertEquals("{\"x\":0.1}", json(Map.of("x", 0.1f)));
        assertEquals("{\"x\":0.82}", json(Map.of("x", 0.82)));
        assertEquals("{\"x\":15}", json(Map.of("x", 15.0)));
        assertEquals("{\"x\":100000000000000000000}", json(Map.of("x", 1e20)), "never scientific notation");
        assertEquals("{\"x\":0.0000000001}", json(Map.of("x", 1e-10)), "10 places, not 11");
        assertEquals("{\"x\":0.0000001}", json(Map.of("x", 1e-7)));
        assertEquals("{\"x\":1000}", json(Map.of("x", new BigDecimal("1E+3"))), "BigDecimal in plain notation");
        assertEquals("{\"x\":2.10}", json(Map.of("x", new BigDecimal("2.10"))), "BigDecimal keeps its digits");
        // through the ingest path (records as JSON trees), too
        Map<String, Object> rec = new LinkedHashMap<>();
        rec.put("x", new BigDecimal("1E+3"));
        rec.put("y", new BigDecimal("2.10"));
        rec.put("z", 2.10);
        rec.put("t", Instant.parse("2026-10-01T00:00:15Z"));
        assertEquals("[{\"x\":1000,\"y\":2.10,\"z\":2.1,\"t\":\"2026-10-01T00:00:15.000Z\"}]",
                json(Transport.records(List.of(rec), "samples")));
        assertThrows(IllegalArgumentException.class, () -> Transport.records(List.of("not an object"), "samples"));
        assertThrows(IllegalArgumentException.class, () -> Json.encode(Map.of("x", Double.NaN)));
        assertThrows(IllegalArgumentException.class, () -> Json.toTree(Map.of("x", Double.POSITIVE_INFINITY)));
    }

    @Test
    void instantsAreUtcWithMilliseconds() {
        Instant i = Instant.parse("2026-10-01T00:00:15.123456789Z");
        assertEquals("{\"t\":\"2026-10-01T00:00:15.123Z\"}", json(Map.of("t", i)));
        assertEquals("{\"t\":\"2026-10-01T00:00:15.000Z\"}",
                json(Map.of("t", OffsetDateTime.of(2026, 10, 1, 2, 0, 15, 0, ZoneOffset.ofHours(2)))));
        assertEquals("{\"d\":\"2026-10-01\"}", json(Map.of("d", LocalDate.of(2026, 10, 1))));
        assertThrows(IllegalArgumentException.class, () -> Json.encode(Map.of("t", LocalDateTime.now())));
        assertEquals("2026-10-01T00:00:15.123Z", Json.formatParam("from", i));
        assertEquals("2026-10-01", Json.formatParam("from", LocalDate.of(2026, 10, 1)));
        assertEquals("?from=2026-10-01&to=2026-10-01T00%3A00%3A15.123Z",
                Transport.query(new LinkedHashMap<>(Map.of("from", "2026-10-01"))) + "&to="
                        + java.net.URLEncoder.encode(Json.formatParam("to", i), StandardCharsets.UTF_8));
    }

    @Test
    void typedRecordsAreSnakeCaseWithoutNulls() {
        GpuSample s = GpuSample.builder().node("n").gpuUuid("GPU-1").model("L40S").namespace("ns").pod("p")
                .deploymentId("d").windowSeconds(15).utilization(0.5).memoryUsedGb(20.25).powerW(180.5).build();
        assertEquals("{\"node\":\"n\",\"gpu_uuid\":\"GPU-1\",\"model\":\"L40S\",\"namespace\":\"ns\",\"pod\":\"p\","
                + "\"deployment_id\":\"d\",\"window_seconds\":15,\"utilization\":0.5,\"memory_used_gb\":20.25,"
                + "\"power_w\":180.5}", json(s));
        UsageEvent e = UsageEvent.builder().usageType("llm_tokens").source("gateway").unit("tokens_in", 7000)
                .cost(new Money(new BigDecimal("412.70"), "EUR")).build();
        assertEquals("{\"usage_type\":\"llm_tokens\",\"source\":\"gateway\",\"units\":{\"tokens_in\":7000},"
                + "\"cost\":{\"amount\":412.70,\"currency\":\"EUR\"}}", json(e));
    }

    @Test
    void answersAreReadExactly() throws Exception {
        String body = "{\"period\":\"2026-10\",\"from\":\"2026-10-01T00:00:00Z\",\"to\":\"2026-11-01T00:00:00Z\","
                + "\"items\":[{\"tenant_id\":\"t\",\"deployment_id\":\"d\",\"gpu_seconds\":182300.1234,"
                + "\"gpu_memory_gb_seconds\":10230000,\"energy_wh\":25900.5,"
                + "\"allocated\":{\"amount\":\"412.70\",\"currency\":\"EUR\"},\"policy_id\":\"alp_1\",\"new\":1}],"
                + "\"deployments\":[],\"tenants\":[{\"tenant_id\":\"t\",\"gpu_seconds\":1,\"share\":0.7,"
                + "\"cost\":{\"amount\":\"3.63\",\"currency\":\"EUR\"}}],\"daily\":[{\"date\":\"2026-10-01\","
                + "\"deployment_id\":\"d\",\"cost\":{\"amount\":\"0.10\",\"currency\":\"EUR\"}}],"
                + "\"gaps\":[],\"findings\":[],\"a_future_member\":{\"x\":[1,2]}}";
        Allocation a = Json.MAPPER.readerFor(Allocation.class).readValue(Json.MAPPER.readTree(body));
        assertEquals(new BigDecimal("182300.1234"), a.items().get(0).gpuSeconds());
        assertEquals(new BigDecimal("25900.5"), a.items().get(0).energyWh());
        assertEquals(new Money(new BigDecimal("412.70"), "EUR"), a.items().get(0).allocated());
        assertEquals("412.70", a.items().get(0).allocated().amount().toPlainString());
        assertEquals(new BigDecimal("0.7"), a.tenants().get(0).share());
        assertEquals(LocalDate.of(2026, 10, 1), a.daily().get(0).date());
        assertEquals(Instant.parse("2026-10-01T00:00:00Z"), a.from());
        assertTrue(a.gaps().isEmpty());
    }

    @Test
    void errorEnvelopesMapToTheirClasses() {
        java.net.http.HttpHeaders h = java.net.http.HttpHeaders.of(
                Map.of("retry-after", List.of("7"), "x-request-id", List.of("r-1")), (k, v) -> true);
        byte[] body = ("{\"error\":{\"code\":\"validation_error\",\"message\":\"bad\",\"message_i18n\":{\"en\":\"bad\","
                + "\"fr\":\"mauvais\"},\"details\":[{\"index\":2,\"field\":\"utilization\",\"reason\":\"must be <= 1\"},"
                + "{\"field\":\"from\",\"reason\":\"x\"}],\"request_id\":\"r-2\"}}").getBytes(StandardCharsets.UTF_8);
        EnterpriseAIException e = Errors.fromResponse(422, h, body);
        ValidationException v = assertInstanceOf(ValidationException.class, e);
        assertEquals(List.of("utilization", "from"), v.fields());
        assertEquals(new FieldError(2, "utilization", "must be <= 1"), v.getDetails().get(0));
        assertNull(v.getDetails().get(1).index());
        assertEquals("r-2", v.getRequestId());
        assertEquals(Map.of("en", "bad", "fr", "mauvais"), v.getMessageI18n());
        v.annotateBatch(100, null);
        assertEquals(102, v.getDetails().get(0).index(), "shifted to the caller's list");
        assertNull(v.getDetails().get(1).index());

        // without the envelope: the base class (behaviour.json `api_error`), status, Retry-After and request id kept
        EnterpriseAIException r = Errors.fromResponse(429, h, new byte[0]);
        assertEquals(EnterpriseAIException.class, r.getClass());
        assertEquals(429, r.getStatus());
        assertEquals(Duration.ofSeconds(7), r.getRetryAfter());
        assertNull(r.getCode());
        assertEquals("r-1", r.getRequestId());
        EnterpriseAIException oops = Errors.fromResponse(401, h, "oops".getBytes());
        assertEquals(EnterpriseAIException.class, oops.getClass());
        assertEquals("oops", oops.getBody());
        for (int status : new int[] {418, 503, 504}) {
            assertEquals(EnterpriseAIException.class, Errors.fromResponse(status, h, null).getClass());
            assertEquals(status, Errors.fromResponse(status, h, null).getStatus());
        }

        Instant now = Instant.parse("2026-10-01T00:00:00Z");
        assertEquals(Duration.ofSeconds(30), Errors.parseRetryAfter("Thu, 01 Oct 2026 00:00:30 GMT", now));
        assertEquals(Duration.ofMillis(1500), Errors.parseRetryAfter("1.5", now));
        assertNull(Errors.parseRetryAfter("soon", now));
        assertNull(Errors.parseRetryAfter(null, now));
    }

    @Test
    void theKeyNeverShows() {
        EnterpriseAIClient.Builder b = EnterpriseAIClient.builder().baseUrl("http://127.0.0.1:9/")
                .apiKey("eai_live_super_secret_value_0123456789").tenant("acme").locale(Locale.FRENCH);
        assertFalse(b.toString().contains("super_secret"));
        try (EnterpriseAIClient c = b.build()) {
            assertFalse(c.toString().contains("super_secret"), c.toString());
            assertTrue(c.toString().contains("acme"));
            assertEquals("http://127.0.0.1:9", c.baseUrl(), "trailing slash removed");
            assertEquals(Locale.FRENCH, c.locale());
            assertEquals("fr", c.withLocale(Locale.FRENCH).toString().replaceAll(".*locale=([a-zA-Z-]+).*", "$1"));
        }
    }
}
