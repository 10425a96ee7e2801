package ai.enterprise.eai.usage;

import ai.enterprise.eai.EnterpriseAIClient;
import java.time.Duration;
import java.util.Map;

/**
 * A process that emits usage events and exits without closing its emitter: the emitter's JVM shutdown hook must
 * deliver them. Args: base URL, API key, deployment id, count.
 */
public final class ExitFlushMain {

    private ExitFlushMain() {}

    public static void main(String[] args) {
        EnterpriseAIClient client = EnterpriseAIClient.builder().baseUrl(args[0]).apiKey(args[1]).build();
        UsageEmitter emitter = UsageEmitter.builder(client)
                .defaults(Map.of("source", "exit-hook", "usage_type", "llm_tokens", "deployment_id", args[2]))
                .flushInterval(Duration.ofHours(1)) // nothing is sent before the exit
                .batchSize(100)
                .build();
        for (int i = 0; i < Integer.parseInt(args[3]); i++) {
            emitter.emit(Map.of("units", Map.of("tokens_in", 10 + i)));
        }
        System.out.println("emitted, exiting");
        System.exit(0);
    }
}
