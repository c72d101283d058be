import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.security.scram.internals.ScramFormatter;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;

import java.util.Base64;

/**
 * {"op": "ScramFormatter", "mechanism": "SCRAM-SHA-256", "password": P, "salt": base64,
 *  "iterations": I} or, instead of password/salt/iterations, {"salted_password": base64}:
 * Kafka's ScramFormatter's salted password, stored key and server key, as base64.
 */
public final class ScramFormatterOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception {
        ScramFormatter formatter = new ScramFormatter(ScramMechanism.forMechanismName(request.get("mechanism").asText()));
        Base64.Decoder decoder = Base64.getDecoder();
        byte[] salted;
        if (request.has("salted_password")) {
            salted = decoder.decode(request.get("salted_password").asText());
        } else {
            salted = formatter.saltedPassword(request.get("password").asText(),
                decoder.decode(request.get("salt").asText()), request.get("iterations").asInt());
        }
        Base64.Encoder encoder = Base64.getEncoder();
        ObjectNode out = mapper.createObjectNode();
        out.put("salted_password", encoder.encodeToString(salted));
        out.put("stored_key", encoder.encodeToString(formatter.storedKey(formatter.clientKey(salted))));
        out.put("server_key", encoder.encodeToString(formatter.serverKey(salted)));
        return out;
    }
}
