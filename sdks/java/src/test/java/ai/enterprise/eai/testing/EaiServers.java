package ai.enterprise.eai.testing;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * JUnit 5 extension holding the servers of the run: each is started once, on first use, and destroyed when the
 * whole test run ends (a resource of the root context's store; a JVM shutdown hook as a safety net).
 *
 * <ul>
 *   <li>{@link #shared()}: rate limits off; its bootstrap key is the fixed {@code eai.test.adminKey} that the
 *       pom also exports as {@code EAI_API_KEY}, so the seed snippet runs unchanged;
 *   <li>{@link #smallBatch()}: {@code EAI_MAX_BATCH=3000};
 *   <li>{@link #rateLimited()}: {@code EAI_RATE_LIMIT_PER_KEY=1}.
 * </ul>
 */
public final class EaiServers implements BeforeAllCallback {

    /** The fixed admin key of the shared server (also EAI_API_KEY of the test JVM). */
    public static final String SHARED_ADMIN_KEY = System.getProperty(
            "eai.test.adminKey", "eai_live_java_sdk_test_admin_key_0123456789");

    private static final Map<String, EaiServer> SERVERS = new LinkedHashMap<>();
    private static boolean hooked;

    @Override
    public void beforeAll(ExtensionContext context) {
        context.getRoot().getStore(ExtensionContext.Namespace.GLOBAL).getOrComputeIfAbsent(
                "eai-servers", k -> (ExtensionContext.Store.CloseableResource) EaiServers::closeAll);
    }

    public static EaiServer shared() {
        return get("shared", SHARED_ADMIN_KEY, EaiServer.noRateLimits());
    }

    public static EaiServer smallBatch() {
        Map<String, String> env = EaiServer.noRateLimits();
        env.put("EAI_MAX_BATCH", "3000");
        return get("max-batch-3000", EaiServer.randomKey(), env);
    }

    public static EaiServer rateLimited() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("EAI_RATE_LIMIT_PER_KEY", "1");
        env.put("EAI_RATE_LIMIT_PER_ADDRESS", "0");
        return get("rate-limit-1", EaiServer.randomKey(), env);
    }

    private static synchronized EaiServer get(String name, String key, Map<String, String> env) {
        EaiServer s = SERVERS.get(name);
        if (s == null) {
            if (!hooked) {
                Runtime.getRuntime().addShutdownHook(new Thread(EaiServers::closeAll, "eai-servers-stop"));
                hooked = true;
            }
            s = EaiServer.start(name, key, env);
            SERVERS.put(name, s);
        }
        return s;
    }

    static void closeAll() {
        List<EaiServer> all;
        synchronized (EaiServers.class) {
            all = new ArrayList<>(SERVERS.values());
            SERVERS.clear();
        }
        for (EaiServer s : all) {
            s.close();
        }
    }
}
