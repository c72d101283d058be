import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.DirectoryId;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.controller.PartitionChangeBuilder;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

import java.lang.reflect.Constructor;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.IntPredicate;

/**
 * {"op": "PartitionChange", "cases": [...]}: Kafka's own PartitionChangeBuilder run on each case,
 * answered with the PartitionChangeRecord it builds (its fields, its version and its bytes) or
 * null when it builds none. {"op": "PartitionChange", "ask": "metadata_versions"}: the
 * [name, level] of every MetadataVersion this Kafka knows (what a case may name).
 *
 * A case: "partition" (replicas, directories, isr, removing, adding, elr, last_known_elr, leader,
 * leader_recovery_state, leader_epoch, partition_epoch), "topic_id", "partition_id",
 * "metadata_version" (a name such as "4.1-IV1"), "min_isr", "elr_enabled", "election"
 * (PREFERRED, ONLINE, UNCLEAN), "fenced" and "shutting_down" (who may not lead: the builder's
 * isAcceptableLeader), and the targets, each optional: "target_isr", "target_replicas",
 * "target_removing", "target_adding", "target_leader_recovery_state", "unclean_shutdown",
 * "target_directories" {broker: dir}, "default_directories" {broker: dir} (the
 * DefaultDirProvider; UNASSIGNED for a broker it does not name). Directory ids are
 * java.util.UUID strings.
 *
 * 4.1 turns ELR on with setEligibleLeaderReplicasEnabled; 4.4 takes it in the constructor
 * instead: both are found by reflection so that one source compiles against either.
 */
public final class PartitionChangeOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception {
        if ("metadata_versions".equals(request.path("ask").asText())) {
            ArrayNode versions = mapper.createArrayNode();
            for (MetadataVersion mv : MetadataVersion.VERSIONS) {
                versions.addArray().add(mv.version()).add(mv.featureLevel());
            }
            return versions;
        }
        ArrayNode answers = mapper.createArrayNode();
        for (JsonNode c : request.path("cases")) {
            answers.add(build(c, mapper));
        }
        return answers;
    }

    private static JsonNode build(JsonNode c, ObjectMapper mapper) throws Exception {
        MetadataVersion mv = metadataVersion(c.path("metadata_version").asText());
        Set<Integer> refused = new HashSet<>(ints(c.path("fenced")));
        refused.addAll(ints(c.path("shutting_down")));
        IntPredicate acceptable = broker -> !refused.contains(broker);
        boolean elr = c.path("elr_enabled").asBoolean();
        PartitionChangeBuilder builder = newBuilder(partition(c.path("partition")), uuid(c.path("topic_id").asText()),
            c.path("partition_id").asInt(), acceptable, mv, c.path("min_isr").asInt(), elr);
        builder.setElection(PartitionChangeBuilder.Election.valueOf(c.path("election").asText()));
        if (c.hasNonNull("target_isr")) builder.setTargetIsr(ints(c.get("target_isr")));
        if (c.hasNonNull("target_replicas")) builder.setTargetReplicas(ints(c.get("target_replicas")));
        if (c.hasNonNull("target_removing")) builder.setTargetRemoving(ints(c.get("target_removing")));
        if (c.hasNonNull("target_adding")) builder.setTargetAdding(ints(c.get("target_adding")));
        if (c.hasNonNull("target_leader_recovery_state")) {
            builder.setTargetLeaderRecoveryState(LeaderRecoveryState.of((byte) c.get("target_leader_recovery_state").asInt()));
        }
        if (c.hasNonNull("unclean_shutdown")) builder.setUncleanShutdownReplicas(ints(c.get("unclean_shutdown")));
        c.path("target_directories").fields().forEachRemaining(
            e -> builder.setDirectory(Integer.parseInt(e.getKey()), uuid(e.getValue().asText())));
        Map<Integer, Uuid> defaults = new HashMap<>();
        c.path("default_directories").fields().forEachRemaining(
            e -> defaults.put(Integer.parseInt(e.getKey()), uuid(e.getValue().asText())));
        builder.setDefaultDirProvider(broker -> defaults.getOrDefault(broker, DirectoryId.UNASSIGNED));
        Optional<ApiMessageAndVersion> built = builder.build();
        if (built.isEmpty()) {
            return mapper.nullNode();
        }
        return describe((PartitionChangeRecord) built.get().message(), built.get().version(), mapper);
    }

    /** 4.4's constructor takes the ELR switch; 4.1's has a setter for it. */
    private static PartitionChangeBuilder newBuilder(PartitionRegistration partition, Uuid topicId, int partitionId,
                                                     IntPredicate acceptable, MetadataVersion mv, int minIsr,
                                                     boolean elr) throws Exception {
        for (Constructor<?> constructor : PartitionChangeBuilder.class.getConstructors()) {
            if (constructor.getParameterCount() == 7) {
                return (PartitionChangeBuilder) constructor.newInstance(partition, topicId, partitionId, acceptable, mv,
                    minIsr, elr);
            }
        }
        PartitionChangeBuilder builder = PartitionChangeBuilder.class
            .getConstructor(PartitionRegistration.class, Uuid.class, int.class, IntPredicate.class,
                MetadataVersion.class, int.class)
            .newInstance(partition, topicId, partitionId, acceptable, mv, minIsr);
        PartitionChangeBuilder.class.getMethod("setEligibleLeaderReplicasEnabled", boolean.class).invoke(builder, elr);
        return builder;
    }

    private static MetadataVersion metadataVersion(String name) {
        for (MetadataVersion mv : MetadataVersion.VERSIONS) {
            if (mv.version().equals(name)) {
                return mv;
            }
        }
        throw new IllegalArgumentException("this Kafka has no metadata.version " + name);
    }

    private static PartitionRegistration partition(JsonNode p) {
        List<Integer> replicas = ints(p.path("replicas"));
        Uuid[] directories = new Uuid[replicas.size()];
        for (int i = 0; i < directories.length; i++) {
            directories[i] = uuid(p.path("directories").get(i).asText());
        }
        return new PartitionRegistration.Builder()
            .setReplicas(array(replicas))
            .setDirectories(directories)
            .setIsr(array(ints(p.path("isr"))))
            .setRemovingReplicas(array(ints(p.path("removing"))))
            .setAddingReplicas(array(ints(p.path("adding"))))
            .setElr(array(ints(p.path("elr"))))
            .setLastKnownElr(array(ints(p.path("last_known_elr"))))
            .setLeader(p.path("leader").asInt())
            .setLeaderRecoveryState(LeaderRecoveryState.of((byte) p.path("leader_recovery_state").asInt()))
            .setLeaderEpoch(p.path("leader_epoch").asInt())
            .setPartitionEpoch(p.path("partition_epoch").asInt())
            .build();
    }

    private static ObjectNode describe(PartitionChangeRecord record, short version, ObjectMapper mapper) {
        ObjectNode out = mapper.createObjectNode();
        out.put("version", version);
        out.put("partition_id", record.partitionId());
        out.put("topic_id", javaUuid(record.topicId()));
        out.set("isr", intList(record.isr(), mapper));
        out.put("leader", record.leader());
        out.set("replicas", intList(record.replicas(), mapper));
        out.set("removing_replicas", intList(record.removingReplicas(), mapper));
        out.set("adding_replicas", intList(record.addingReplicas(), mapper));
        out.put("leader_recovery_state", record.leaderRecoveryState());
        if (record.directories() == null) {
            out.putNull("directories");
        } else {
            ArrayNode dirs = out.putArray("directories");
            record.directories().forEach(d -> dirs.add(javaUuid(d)));
        }
        out.set("eligible_leader_replicas", intList(record.eligibleLeaderReplicas(), mapper));
        out.set("last_known_elr", intList(record.lastKnownElr(), mapper));
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buffer = ByteBuffer.allocate(record.size(cache, version));
        record.write(new ByteBufferAccessor(buffer), cache, version);
        StringBuilder hex = new StringBuilder();
        for (byte b : buffer.array()) {
            hex.append(String.format("%02x", b));
        }
        out.put("bytes", hex.toString());
        return out;
    }

    private static JsonNode intList(List<Integer> values, ObjectMapper mapper) {
        if (values == null) {
            return mapper.nullNode();
        }
        ArrayNode list = mapper.createArrayNode();
        values.forEach(list::add);
        return list;
    }

    private static List<Integer> ints(JsonNode node) {
        List<Integer> values = new ArrayList<>();
        node.forEach(v -> values.add(v.asInt()));
        return values;
    }

    private static int[] array(List<Integer> values) {
        return values.stream().mapToInt(Integer::intValue).toArray();
    }

    private static Uuid uuid(String javaUuid) {
        UUID u = UUID.fromString(javaUuid);
        return new Uuid(u.getMostSignificantBits(), u.getLeastSignificantBits());
    }

    private static String javaUuid(Uuid u) {
        return new UUID(u.getMostSignificantBits(), u.getLeastSignificantBits()).toString();
    }
}
