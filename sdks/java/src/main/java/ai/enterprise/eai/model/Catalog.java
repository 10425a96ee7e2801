package ai.enterprise.eai.model;

import java.util.List;

/**
 * The local inference providers ({@code GET /v1/providers/catalog}).
 *
 * @param items the providers
 */
public record Catalog(List<Provider> items) {

    /**
     * The list is never null.
     *
     * @param items the providers
     */
    public Catalog {
        items = items == null ? List.of() : List.copyOf(items);
    }
}
