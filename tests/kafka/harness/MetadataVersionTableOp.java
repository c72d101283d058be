import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.server.common.MetadataVersion;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;

/**
 * {"op": "MetadataVersionTable"}: every MetadataVersion this Kafka knows, with the answer of each
 * of its public no-argument methods giving a boolean or a number (isElrSupported,
 * partitionRecordVersion, ...), found by reflection since the set differs between versions; a
 * method that throws at a level answers "threw ..." there.
 */
public final class MetadataVersionTableOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception {
        ArrayNode out = mapper.createArrayNode();
        for (MetadataVersion mv : MetadataVersion.values()) {
            ObjectNode row = out.addObject();
            row.put("name", mv.version());
            for (Method method : MetadataVersion.class.getMethods()) {
                if (Modifier.isStatic(method.getModifiers()) || method.getParameterCount() != 0
                        || method.getDeclaringClass() != MetadataVersion.class) {
                    continue;
                }
                Class<?> type = method.getReturnType();
                if (type != boolean.class && type != short.class && type != int.class) {
                    continue;
                }
                Object value;
                try {
                    value = method.invoke(mv);
                } catch (InvocationTargetException e) {  // a level the method refuses: say so
                    row.put(method.getName(), "threw " + e.getCause());
                    continue;
                }
                if (value instanceof Boolean) {
                    row.put(method.getName(), (Boolean) value);
                } else {
                    row.put(method.getName(), ((Number) value).intValue());
                }
            }
        }
        return out;
    }
}
