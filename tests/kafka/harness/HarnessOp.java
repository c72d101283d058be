import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * One comparison's entry into Kafka's classes. The harness finds an op by its class name: a
 * request {"op": "PartitionChange", ...} is answered by the class PartitionChangeOp, so each
 * comparison lives in a file of its own and adding one touches nothing else.
 */
public interface HarnessOp {
    JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception;
}
