import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * {"op": "JavaRandomDraws", "seed": S, "bounds": [b, ...], "shuffle": n}: what the JDK's
 * new Random(S) gives for nextInt(b) of each bound in turn, then Collections.shuffle of
 * [0, n) with the same generator: the draws Kafka's placer makes, at any bound.
 */
public final class JavaRandomDrawsOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) {
        Random random = new Random(request.get("seed").asLong());
        ArrayNode out = mapper.createArrayNode();
        ArrayNode draws = out.addArray();
        for (JsonNode bound : request.get("bounds")) {
            draws.add(random.nextInt(bound.asInt()));
        }
        List<Integer> items = new ArrayList<>();
        for (int i = 0; i < request.get("shuffle").asInt(); i++) {
            items.add(i);
        }
        Collections.shuffle(items, random);
        ArrayNode shuffled = out.addArray();
        items.forEach(shuffled::add);
        return out;
    }
}
