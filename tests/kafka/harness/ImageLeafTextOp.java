import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;

import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.image.node.ProvenanceNode;
import org.apache.kafka.metadata.VersionRange;

import java.util.ArrayList;
import java.util.List;

/**
 * {"op": "ImageLeafText", "provenances": [[offset, epoch, timeMs], ...], "ranges": [[min, max], ...],
 *  "doubles": [d, ...], "names": [s, ...]}: the texts kafka-metadata-shell builds its leaves from,
 * each as Kafka's own classes make it: ProvenanceNode's line, VersionRange.toString(),
 * Double.toString(), and the names sorted as its ls, find and tree sort them (String.compareTo).
 */
public final class ImageLeafTextOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception {
        ArrayNode provenances = mapper.createArrayNode();
        for (JsonNode p : request.path("provenances")) {
            MetadataProvenance provenance = new MetadataProvenance(p.get(0).asLong(), p.get(1).asInt(), p.get(2).asLong(), false);
            provenances.add(new ProvenanceNode(provenance).stringify());
        }
        ArrayNode ranges = mapper.createArrayNode();
        for (JsonNode r : request.path("ranges")) {
            ranges.add(VersionRange.of((short) r.get(0).asInt(), (short) r.get(1).asInt()).toString());
        }
        ArrayNode doubles = mapper.createArrayNode();
        for (JsonNode d : request.path("doubles")) {
            doubles.add(Double.toString(d.asDouble()));
        }
        List<String> names = new ArrayList<>();
        for (JsonNode n : request.path("names")) {
            names.add(n.asText());
        }
        names.sort(String::compareTo);
        ArrayNode sorted = mapper.createArrayNode();
        names.forEach(sorted::add);
        return mapper.createObjectNode().setAll(java.util.Map.of(
            "provenances", provenances, "ranges", ranges, "doubles", doubles, "names", sorted));
    }
}
