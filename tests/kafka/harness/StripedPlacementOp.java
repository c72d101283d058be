import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;
import org.apache.kafka.metadata.placement.UsableBroker;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.Random;

/**
 * {"op": "StripedPlacement", "seed": S, "brokers": [[id, rack or null, fenced], ...],
 *  "partitions": N, "replicas": RF}: the replica lists Kafka's StripedReplicaPlacer gives with
 * new Random(S), the brokers offered in the order given.
 */
public final class StripedPlacementOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) {
        List<UsableBroker> brokers = new ArrayList<>();
        for (JsonNode b : request.get("brokers")) {
            Optional<String> rack = b.get(1).isNull() ? Optional.empty() : Optional.of(b.get(1).asText());
            brokers.add(new UsableBroker(b.get(0).asInt(), rack, b.get(2).asBoolean()));
        }
        ClusterDescriber cluster = new ClusterDescriber() {
            @Override
            public Iterator<UsableBroker> usableBrokers() {
                return brokers.iterator();
            }

            @Override
            public Uuid defaultDir(int brokerId) {
                return Uuid.ZERO_UUID;
            }
        };
        StripedReplicaPlacer placer = new StripedReplicaPlacer(new Random(request.get("seed").asLong()));
        PlacementSpec spec = new PlacementSpec(0, request.get("partitions").asInt(),
            (short) request.get("replicas").asInt());
        TopicAssignment placed = placer.place(spec, cluster);
        ArrayNode out = mapper.createArrayNode();
        for (PartitionAssignment partition : placed.assignments()) {
            ArrayNode replicas = out.addArray();
            partition.replicas().forEach(replicas::add);
        }
        return out;
    }
}
