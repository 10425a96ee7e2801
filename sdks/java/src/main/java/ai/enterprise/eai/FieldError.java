package ai.enterprise.eai;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * One rejected field of a {@code validation_error} answer.
 *
 * @param index the position of the bad record in the list <em>you</em> passed (the SDK shifts the server's
 *     per-batch index when it sent your list in several batches); {@code null} for a single object or a query
 *     parameter
 * @param field the field name, dotted for nested ones ({@code units.tokens_in}, {@code cost.amount})
 * @param reason why it was rejected, in English
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record FieldError(Integer index, String field, String reason) {

    @Override
    public String toString() {
        return (index == null ? "" : "record " + index + ", ") + "field `" + field + "`: " + reason;
    }
}
