import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.InputStream;
import java.util.Properties;

/** {"op": "Version"}: the Kafka version whose classes answer (the harness's own check). Read from
 *  kafka-clients' own resource: AppInfoParser, which tells it too, moved package in 4.4. */
public final class VersionOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception {
        Properties props = new Properties();
        try (InputStream in = VersionOp.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            props.load(in);
        }
        return mapper.getNodeFactory().textNode(props.getProperty("version"));
    }
}
