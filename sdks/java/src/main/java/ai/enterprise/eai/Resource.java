package ai.enterprise.eai;

/** What every resource holds: its client (to check it is open) and the client's transport. */
abstract class Resource {

    /** No path parameter. */
    static final String[] NO_ARGS = new String[0];

    final EnterpriseAIClient client;
    final Transport transport;

    Resource(EnterpriseAIClient client, Transport transport) {
        this.client = client;
        this.transport = transport;
    }

    /** The transport, after checking that the client is open. */
    final Transport t() {
        client.ensureOpen();
        return transport;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{" + transport.baseUrl + "}";
    }
}
