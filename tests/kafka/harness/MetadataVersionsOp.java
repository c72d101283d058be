import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.List;

import org.apache.kafka.server.common.MetadataVersion;

/**
 * {"op": "MetadataVersions", "answers": [name, ...]}: every MetadataVersion of this Kafka, with its
 * feature level, whether it is production, the no-argument answers named (record versions and
 * abilities: a name this release lacks answers null, as isCordonedLogDirsSupported in 4.1.2), and
 * the default level of each production feature at it (Feature.defaultLevel, what a new cluster is
 * formatted with). Methods are found by name: the set differs between releases.
 */
public final class MetadataVersionsOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception {
        Class<?> featureClass = Class.forName("org.apache.kafka.server.common.Feature");
        Field production = featureClass.getField("PRODUCTION_FEATURES");
        List<?> features = (List<?>) production.get(null);
        Method featureName = featureClass.getMethod("featureName");
        Method defaultLevel = featureClass.getMethod("defaultLevel", MetadataVersion.class);
        ObjectNode answer = mapper.createObjectNode();
        answer.put("latestProduction", MetadataVersion.LATEST_PRODUCTION.version());
        ArrayNode versions = answer.putArray("versions");
        for (MetadataVersion version : MetadataVersion.values()) {
            ObjectNode row = versions.addObject();
            row.put("name", version.version());
            row.put("level", version.featureLevel());
            row.put("production", version.isProduction());
            ObjectNode answers = row.putObject("answers");
            for (JsonNode name : request.path("answers")) {
                Object value = call(version, name.asText());
                if (value == null) {
                    answers.putNull(name.asText());
                } else {
                    answers.set(name.asText(), mapper.valueToTree(value));
                }
            }
            ObjectNode defaults = row.putObject("defaults");
            for (Object feature : features) {
                defaults.put((String) featureName.invoke(feature), ((Number) defaultLevel.invoke(feature, version)).intValue());
            }
        }
        return answer;
    }

    private static Object call(MetadataVersion version, String name) throws Exception {
        Method method;
        try {
            method = MetadataVersion.class.getMethod(name);
        } catch (NoSuchMethodException absent) {
            return null;
        }
        return method.invoke(version);
    }
}
