import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.metadata.MetadataRecordType;

/**
 * {"op": "RecordTypes"}: Kafka's names of its record types, in both spellings: every
 * MetadataRecordType constant with the simple name of the message class it makes
 * (BROKER_REGISTRATION_CHANGE_RECORD, BrokerRegistrationChangeRecord), and every
 * ControlRecordType constant but UNKNOWN (what an unreadable control key maps to). ControlRecordType
 * moved to common.record.internal in 4.4: found by either name.
 */
public final class RecordTypesOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception {
        ObjectNode answer = mapper.createObjectNode();
        ArrayNode metadata = answer.putArray("metadata");
        for (MetadataRecordType type : MetadataRecordType.values()) {
            ObjectNode row = metadata.addObject();
            row.put("constant", type.name());
            row.put("message", type.newMetadataRecord().getClass().getSimpleName());
        }
        ArrayNode control = answer.putArray("control");
        for (Object type : controlRecordType().getEnumConstants()) {
            String name = ((Enum<?>) type).name();
            if (!name.equals("UNKNOWN")) {
                control.add(name);
            }
        }
        return answer;
    }

    private static Class<?> controlRecordType() throws ClassNotFoundException {
        try {
            return Class.forName("org.apache.kafka.common.record.internal.ControlRecordType");
        } catch (ClassNotFoundException before44) {
            return Class.forName("org.apache.kafka.common.record.ControlRecordType");
        }
    }
}
