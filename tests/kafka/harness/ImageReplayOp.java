import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.loader.MetadataBatchLoader;
import org.apache.kafka.image.writer.ImageWriterOptions;
import org.apache.kafka.image.writer.RecordListWriter;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.raft.Batch;
import org.apache.kafka.raft.LeaderAndEpoch;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.fault.FaultHandler;

import java.lang.reflect.Constructor;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.OptionalInt;

/**
 * {"op": "ImageReplay", "commits": [[[record, ...], ...], ...]}: records (base64 of a metadata
 * record value as MetadataRecordSerde frames it) replayed by Kafka's own loader path: each batch
 * through MetadataBatchLoader.loadBatch, and maybeFlushBatches after each commit's batches, as
 * MetadataLoader.handleCommit does (so metadata transactions are Kafka's loader's own). The image
 * last published is written back with MetadataImage.write at its own metadata.version
 * (ImageWriterOptions.Builder(image), as the snapshot generator does).
 *
 * Answers {"records": [base64, ...], "losses": [...], "faults": [...]}: the records the image
 * writes, what the writer's loss handler reported, and what the loader's fault handler was told.
 *
 * {"op": "ImageReplay", "describe": true} answers what this Kafka knows: its metadata.version
 * levels {"levels": {level: name}} and the highest version of each record type {"records": {api key: version}}.
 */
public final class ImageReplayOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception {
        if (request.path("describe").asBoolean(false)) {
            return describe(mapper);
        }
        ObjectNode answer = mapper.createObjectNode();
        ArrayNode faults = answer.putArray("faults");
        MetadataImage[] published = {MetadataImage.EMPTY};
        FaultHandler faultHandler = (message, cause) -> {
            faults.add(message + (cause == null ? "" : ": " + cause));
            return new RuntimeException(message, cause);
        };
        MetadataBatchLoader.MetadataUpdater updater = (delta, image, manifest) -> published[0] = image;
        MetadataBatchLoader loader = newLoader(faultHandler, updater);
        LeaderAndEpoch leader = new LeaderAndEpoch(OptionalInt.of(1), 1);
        long offset = 0;
        for (JsonNode commit : request.path("commits")) {
            for (JsonNode batch : commit) {
                List<ApiMessageAndVersion> records = new ArrayList<>();
                int size = 0;
                for (JsonNode record : batch) {
                    byte[] bytes = Base64.getDecoder().decode(record.asText());
                    size += bytes.length;
                    records.add(MetadataRecordSerde.INSTANCE.read(new ByteBufferAccessor(ByteBuffer.wrap(bytes)), bytes.length));
                }
                if (records.isEmpty()) {
                    continue;
                }
                loader.loadBatch(Batch.data(offset, 1, 1000L + offset, size, records), leader);
                offset += records.size();
            }
            loader.maybeFlushBatches(leader, true);
        }
        List<String> losses = new ArrayList<>();
        ImageWriterOptions options = new ImageWriterOptions.Builder(published[0])
            .setLossHandler(loss -> losses.add(loss.getMessage()))
            .build();
        RecordListWriter writer = new RecordListWriter();
        published[0].write(writer, options);
        ArrayNode written = answer.putArray("records");
        for (ApiMessageAndVersion record : writer.records()) {
            written.add(Base64.getEncoder().encodeToString(frame(record)));
        }
        ArrayNode lost = answer.putArray("losses");
        losses.forEach(lost::add);
        return answer;
    }

    private static byte[] frame(ApiMessageAndVersion record) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = MetadataRecordSerde.INSTANCE.recordSize(record, cache);
        ByteBuffer buffer = ByteBuffer.allocate(size);
        MetadataRecordSerde.INSTANCE.write(record, cache, new ByteBufferAccessor(buffer));
        return buffer.array();
    }

    /** The loader's constructor differs: 4.4 moved LogContext (common.utils.internals) and added a
     *  SupportedConfigChecker (every config supported: SupportedConfigChecker.TRUE, its default). */
    private static MetadataBatchLoader newLoader(FaultHandler faultHandler, MetadataBatchLoader.MetadataUpdater updater)
            throws Exception {
        Constructor<?> constructor = MetadataBatchLoader.class.getConstructors()[0];
        Class<?>[] types = constructor.getParameterTypes();
        Object[] args = new Object[types.length];
        for (int i = 0; i < types.length; i++) {
            String name = types[i].getSimpleName();
            if (name.equals("LogContext")) {
                args[i] = types[i].getConstructor(String.class).newInstance("[ImageReplay] ");
            } else if (name.equals("Time")) {
                args[i] = Time.SYSTEM;
            } else if (name.equals("FaultHandler")) {
                args[i] = faultHandler;
            } else if (name.equals("MetadataUpdater")) {
                args[i] = updater;
            } else if (name.equals("SupportedConfigChecker")) {
                args[i] = types[i].getField("TRUE").get(null);
            } else {
                throw new IllegalStateException("MetadataBatchLoader takes a " + types[i].getName() + " this op does not know");
            }
        }
        return (MetadataBatchLoader) constructor.newInstance(args);
    }

    private static JsonNode describe(ObjectMapper mapper) {
        ObjectNode answer = mapper.createObjectNode();
        ObjectNode levels = answer.putObject("levels");
        for (MetadataVersion version : MetadataVersion.values()) {
            levels.put(Short.toString(version.featureLevel()), version.version());
        }
        answer.put("latest_production", MetadataVersion.latestProduction().featureLevel());
        ObjectNode records = answer.putObject("records");
        for (MetadataRecordType type : MetadataRecordType.values()) {
            records.put(Short.toString(type.id()), type.highestSupportedVersion());
        }
        return answer;
    }
}
