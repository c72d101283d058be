import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;

import java.lang.reflect.Method;

/**
 * {"op": "CidrInRange", "pairs": [[host, cidr], ...]}: Kafka's CidrUtils.isInRange(host, cidr)
 * for each pair, the test of an ACL host written as a CIDR block. The class is Kafka 4.4's, so it
 * is found by reflection (an older Kafka answers ClassNotFoundException).
 */
public final class CidrInRangeOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception {
        Method isInRange = Class.forName("org.apache.kafka.server.authorizer.internals.CidrUtils")
            .getMethod("isInRange", String.class, String.class);
        ArrayNode out = mapper.createArrayNode();
        for (JsonNode pair : request.get("pairs")) {
            out.add((Boolean) isInRange.invoke(null, pair.get(0).asText(), pair.get(1).asText()));
        }
        return out;
    }
}
