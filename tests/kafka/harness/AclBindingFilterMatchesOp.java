import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;

import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/**
 * {"op": "AclBindingFilterMatches", "filter": F, "bindings": [B, ...]}: whether Kafka's
 * AclBindingFilter.matches each binding. Both are arrays in the record's order and codes:
 * [resourceType, name, patternType, principal, host, operation, permissionType]; a filter's
 * name, principal and host may be null (any).
 */
public final class AclBindingFilterMatchesOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) {
        JsonNode f = request.get("filter");
        AclBindingFilter filter = new AclBindingFilter(
            new ResourcePatternFilter(ResourceType.fromCode((byte) f.get(0).asInt()), text(f.get(1)),
                PatternType.fromCode((byte) f.get(2).asInt())),
            new AccessControlEntryFilter(text(f.get(3)), text(f.get(4)),
                AclOperation.fromCode((byte) f.get(5).asInt()), AclPermissionType.fromCode((byte) f.get(6).asInt())));
        ArrayNode out = mapper.createArrayNode();
        for (JsonNode b : request.get("bindings")) {
            AclBinding binding = new AclBinding(
                new ResourcePattern(ResourceType.fromCode((byte) b.get(0).asInt()), b.get(1).asText(),
                    PatternType.fromCode((byte) b.get(2).asInt())),
                new AccessControlEntry(b.get(3).asText(), b.get(4).asText(),
                    AclOperation.fromCode((byte) b.get(5).asInt()), AclPermissionType.fromCode((byte) b.get(6).asInt())));
            out.add(filter.matches(binding));
        }
        return out;
    }

    private static String text(JsonNode node) {
        return node.isNull() ? null : node.asText();
    }
}
