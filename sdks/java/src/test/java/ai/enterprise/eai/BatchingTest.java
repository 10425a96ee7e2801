package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationDeployment;
import ai.enterprise.eai.model.IngestResult;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.FaultProxy;
import ai.enterprise.eai.testing.Fixtures;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Large lists go in batches under the server's limit; a 413 halves the batch. Requests counted by a proxy. */
@ExtendWith(EaiServers.class)
class BatchingTest {

    private static final String SAMPLES = "/v1/finops/gpu/samples";

    /** The end of the last 15 s window that ended over a minute ago: never in the future. */
    private static Instant lastEnd() {
        Instant now = Instant.now().minusSeconds(60).truncatedTo(ChronoUnit.SECONDS);
        return now.minusSeconds(now.getEpochSecond() % 15);
    }

    @Test
    void twentyFiveThousandSamplesGoInFiveRequestsAndAreAcceptedOnce() {
        EaiServer server = EaiServers.shared();
        String deployment = "batch-25k-" + Fixtures.uniq();
        Instant last = lastEnd();
        // one GPU, 15 s windows, distinct timestamps over the last ~4.3 days
        List<Map<String, Object>> samples = Fixtures.series("GPU-" + deployment, deployment, last, 25_000);
        Instant first = last.minusSeconds(15L * 24_999);
        assertTrue(first.isAfter(Instant.now().minus(Duration.ofDays(5))));

        try (FaultProxy proxy = new FaultProxy(server.baseUrl());
                EnterpriseAIClient client = EnterpriseAIClient.builder().baseUrl(proxy.url())
                        .apiKey(server.adminKey()).build()) {
            IngestResult r = client.finops().gpuSamples(samples);
            assertEquals(new IngestResult(25_000, 0, 5), r);
            List<FaultProxy.Seen> posts = proxy.seen("POST", SAMPLES);
            assertEquals(5, posts.size(), "25,000 in batches of the default 5,000");
            assertTrue(posts.stream().allMatch(p -> p.records() == 5_000 && p.status() == 200), posts.toString());

            // The period of the series, read back: exactly 25,000 samples of one GPU, nothing interpolated.
            Allocation a = client.finops().gpuAllocation(first.minusSeconds(15), last.plusSeconds(1));
            AllocationDeployment d = Fixtures.deployment(a, deployment).orElseThrow();
            assertEquals(25_000, d.samples());
            assertEquals(1, d.gpus());
            assertEquals(0, d.estimatedSamples());

            // Everything again, in batches of 10,000: all duplicates, still 25,000 stored.
            proxy.reset();
            IngestResult again = client.finops().gpuSamples(samples, IngestOptions.defaults().withBatchSize(10_000));
            assertEquals(new IngestResult(25_000, 25_000, 3), again);
            assertEquals(List.of(10_000, 10_000, 5_000),
                    proxy.seen("POST", SAMPLES).stream().map(FaultProxy.Seen::records).toList());
            Allocation b = client.finops().gpuAllocation(first.minusSeconds(15), last.plusSeconds(1));
            assertEquals(25_000, Fixtures.deployment(b, deployment).orElseThrow().samples(), "counted once");
        }
    }

    @Test
    void a413HalvesTheBatchAndTheRestGoesOnAtTheSmallerSize() {
        EaiServer small = EaiServers.smallBatch(); // EAI_MAX_BATCH=3000
        String deployment = "batch-halve-" + Fixtures.uniq();
        Instant last = lastEnd();
        List<Map<String, Object>> samples = Fixtures.series("GPU-" + deployment, deployment, last, 7_000);
        try (FaultProxy proxy = new FaultProxy(small.baseUrl());
                EnterpriseAIClient client = EnterpriseAIClient.builder().baseUrl(proxy.url())
                        .apiKey(small.adminKey()).build()) {
            IngestResult r = client.finops().gpuSamples(samples);
            assertEquals(new IngestResult(7_000, 0, 3), r);
            List<FaultProxy.Seen> posts = proxy.seen("POST", SAMPLES);
            assertEquals(List.of(5_000, 2_500, 2_500, 2_000), posts.stream().map(FaultProxy.Seen::records).toList());
            assertEquals(List.of(413, 200, 200, 200), posts.stream().map(FaultProxy.Seen::status).toList());

            Allocation a = client.finops().gpuAllocation(last.minus(Duration.ofDays(2)), last.plusSeconds(1));
            assertEquals(7_000, Fixtures.deployment(a, deployment).orElseThrow().samples(),
                    "the 413 batch stored nothing; every sample once");
        }
    }

    @Test
    void aSmallMaxBatchSizeIsHonouredForUsageEventsToo() {
        EaiServer server = EaiServers.shared();
        String deployment = "batch-events-" + Fixtures.uniq();
        try (EnterpriseAIClient admin = server.admin();
                FaultProxy proxy = new FaultProxy(server.baseUrl());
                EnterpriseAIClient client = EnterpriseAIClient.builder().baseUrl(proxy.url())
                        .apiKey(server.adminKey()).maxBatchSize(4).build()) {
            String acme = Fixtures.ensureTenant(admin, "acme", "Acme Corp").id();
            List<Map<String, Object>> events = new java.util.ArrayList<>();
            for (int i = 0; i < 10; i++) {
                events.add(Fixtures.usageEvent(acme, deployment, Instant.now().minusSeconds(5), Map.of("tokens_in", i)));
            }
            assertEquals(new IngestResult(10, 0, 3), client.usage().events(events));
            assertEquals(List.of(4, 4, 2),
                    proxy.seen("POST", "/v1/usage/events").stream().map(FaultProxy.Seen::records).toList());
        }
    }
}
