import java.time.Instant;
import java.util.List;

/** Never shows the webhook secret. */
@Override
public String toString() {
    return "Budget[id=" + id + ", tenantId=" + tenantId + ", name=" + name + ", period=" + period
            + ", limit=" + limit + ", tokensLimit=" + tokensLimit + ", thresholdsPct=" + thresholdsPct
            + ", enforce=" + enforce + ", webhookUrl=" + webhookUrl + ", effectiveFrom=" + effectiveFrom
            + ", effectiveTo=" + effectiveTo + ", status=" + status + ", current=" + current
            + ", webhookSecret=" + (webhookSecret == null ? "null" : "<redacted>") + "]";
}
