import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.security.ssl.SslPrincipalMapper;

/**
 * {"op": "SslPrincipalMapper", "rules": R, "subjects": [...]}: {"invalid": why} when Kafka's
 * SslPrincipalMapper refuses the rules, else {"names": [{"name": N} or {"refused": why}, ...]},
 * one per subject.
 */
public final class SslPrincipalMapperOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) {
        ObjectNode out = mapper.createObjectNode();
        SslPrincipalMapper rules;
        try {
            rules = SslPrincipalMapper.fromRules(request.get("rules").asText());
        } catch (RuntimeException e) {
            out.put("invalid", e.toString());
            return out;
        }
        ArrayNode names = out.putArray("names");
        for (JsonNode subject : request.get("subjects")) {
            ObjectNode answer = names.addObject();
            try {
                answer.put("name", rules.getName(subject.asText()));
            } catch (Exception e) {
                answer.put("refused", e.toString());
            }
        }
        return out;
    }
}
