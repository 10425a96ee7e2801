package ai.enterprise.eai.testing;

import ai.enterprise.eai.EnterpriseAIClient;
import ai.enterprise.eai.NotFoundException;
import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationDeployment;
import ai.enterprise.eai.model.Tenant;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/** Payloads and helpers shared by the tests. */
public final class Fixtures {

    private Fixtures() {}

    /** A short random suffix, so that tests sharing a server never collide. */
    public static String uniq() {
        return UUID.randomUUID().toString().substring(0, 8);
    }

    /** The start of the hour three hours ago: whole hours of samples inside it are in the past. */
    public static Instant recentHour() {
        return Instant.now().truncatedTo(ChronoUnit.HOURS).minus(Duration.ofHours(3));
    }

    /** One sample (the shape of crates/api/tests/http.rs {@code sample}). */
    public static Map<String, Object> sample(String gpu, String deployment, Instant end, int powerW) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("node", "gpu-node-3");
        s.put("gpu_uuid", gpu);
        s.put("model", "H100-80GB");
        s.put("namespace", "eai-inference");
        s.put("pod", deployment + "-0");
        s.put("deployment_id", deployment);
        s.put("window_seconds", 15);
        s.put("utilization", 0.82);
        s.put("memory_used_gb", 61.2);
        s.put("power_w", powerW);
        if (end != null) {
            s.put("timestamp", end.toString());
        }
        return s;
    }

    /** 240 samples of 15 s filling the hour that starts at {@code hour}. */
    public static List<Map<String, Object>> hourOfSamples(String gpu, String deployment, Instant hour, int powerW) {
        List<Map<String, Object>> out = new ArrayList<>(240);
        for (int k = 1; k <= 240; k++) {
            out.add(sample(gpu, deployment, hour.plusSeconds(15L * k), powerW));
        }
        return out;
    }

    /** {@code n} samples of one GPU, 15 s windows ending at {@code lastEnd}, {@code lastEnd - 15 s}, ... */
    public static List<Map<String, Object>> series(String gpu, String deployment, Instant lastEnd, int n) {
        List<Map<String, Object>> out = new ArrayList<>(n);
        for (int k = n - 1; k >= 0; k--) {
            out.add(sample(gpu, deployment, lastEnd.minusSeconds(15L * k), 300));
        }
        return out;
    }

    /** A usage event on a deployment (the shape of http.rs {@code usage_event}), with a tenant. */
    public static Map<String, Object> usageEvent(String tenantId, String deployment, Instant at,
            Map<String, Object> units) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("tenant_id", tenantId);
        e.put("usage_type", "llm_tokens");
        e.put("source", "gateway");
        e.put("occurred_at", at);
        e.put("deployment_id", deployment);
        e.put("units", units);
        return e;
    }

    /** The worked example's pricing, on one deployment pattern, effective since 2020. */
    public static Map<String, Object> workedExamplePolicy(String name, String deploymentPattern) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("name", name);
        p.put("deployment_pattern", deploymentPattern);
        p.put("currency", "EUR");
        p.put("gpu_hourly_cost", "2.10");
        p.put("overhead_pct", "18");
        p.put("energy_kwh_price", "0.21");
        p.put("pue", "1.4");
        p.put("effective_from", "2020-01-01");
        return p;
    }

    /** The tenant of that slug, registered (with a fresh id) when it is not yet. */
    public static Tenant ensureTenant(EnterpriseAIClient admin, String slug, String name) {
        try {
            return admin.tenants().get(slug);
        } catch (NotFoundException e) {
            return admin.tenants().create(slug, name, UUID.randomUUID().toString());
        }
    }

    /** The row of a deployment in an allocation. */
    public static Optional<AllocationDeployment> deployment(Allocation a, String deploymentId) {
        return a.deployments().stream().filter(d -> d.deploymentId().equals(deploymentId)).findFirst();
    }
}
