import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.metadata.MetadataJsonConverters;
import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

import java.io.File;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;

/**
 * {"op": "SnapshotFileRead", "path": FILE}: a snapshot (or log segment) file as Kafka's own
 * classes read it: FileRecords.open, each batch checked (ensureValid: its CRC and sizes), each
 * control record's type by ControlRecordType.parse of its key, each data record's value by
 * MetadataRecordSerde and written as JSON by MetadataJsonConverters (as kafka-dump-log does).
 *
 * Answers {"batches": [{"baseOffset", "lastOffset", "control", "records": [...]}]}: a control
 * record as its type's name, a data record as {"type", "version", "data"}. The record classes
 * moved to common.record.internal in 4.4: they are reached by reflection, under either name.
 */
public final class SnapshotFileReadOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception {
        Class<?> fileRecords = recordClass("FileRecords");
        Method parse = recordClass("ControlRecordType").getMethod("parse", ByteBuffer.class);
        Object records = fileRecords.getMethod("open", File.class).invoke(null, new File(request.path("path").asText()));
        ObjectNode answer = mapper.createObjectNode();
        ArrayNode batches = answer.putArray("batches");
        try {
            for (Object batch : (Iterable<?>) fileRecords.getMethod("batches").invoke(records)) {
                Class<?> batchClass = recordClass("RecordBatch");
                batchClass.getMethod("ensureValid").invoke(batch);
                ObjectNode row = batches.addObject();
                row.put("baseOffset", (Long) batchClass.getMethod("baseOffset").invoke(batch));
                row.put("lastOffset", (Long) batchClass.getMethod("lastOffset").invoke(batch));
                boolean control = (Boolean) batchClass.getMethod("isControlBatch").invoke(batch);
                row.put("control", control);
                ArrayNode out = row.putArray("records");
                Class<?> recordClass = recordClass("Record");
                for (Object record : (Iterable<?>) batch) {
                    if (control) {
                        ByteBuffer key = (ByteBuffer) recordClass.getMethod("key").invoke(record);
                        out.add(((Enum<?>) parse.invoke(null, key)).name());
                    } else {
                        ByteBuffer value = (ByteBuffer) recordClass.getMethod("value").invoke(record);
                        ApiMessageAndVersion message = MetadataRecordSerde.INSTANCE.read(
                            new ByteBufferAccessor(value), value.remaining());
                        ObjectNode json = out.addObject();
                        json.put("type", MetadataRecordType.fromId(message.message().apiKey()).name());
                        json.put("version", message.version());
                        json.set("data", MetadataJsonConverters.writeJson(message.message(), message.version()));
                    }
                }
            }
        } finally {
            fileRecords.getMethod("close").invoke(records);
        }
        return answer;
    }

    private static Class<?> recordClass(String name) throws ClassNotFoundException {
        try {
            return Class.forName("org.apache.kafka.common.record.internal." + name);
        } catch (ClassNotFoundException before44) {
            return Class.forName("org.apache.kafka.common.record." + name);
        }
    }
}
