import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * Kafka's own classes served to the Python tests (tests/kafka_peer/harness.py): one JSON request
 * per line on stdin, one JSON answer per line on stdout, {"result": ...} or {"error": "..."}, for
 * the life of a test session. Compiled at test time against one Kafka version's jars.
 */
public final class KafkaHarness {
    private static final Map<String, HarnessOp> OPS = new HashMap<>();

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream answers = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        // whatever Kafka's classes print goes to stderr, never between the answers
        System.setOut(System.err);
        String line;
        while ((line = in.readLine()) != null) {
            ObjectNode answer = mapper.createObjectNode();
            try {
                JsonNode request = mapper.readTree(line);
                answer.set("result", op(request.path("op").asText()).apply(request, mapper));
            } catch (Throwable t) {
                answer.put("error", t.toString());
                StringWriter trace = new StringWriter();
                t.printStackTrace(new PrintWriter(trace));
                answer.put("trace", trace.toString());
            }
            answers.println(mapper.writeValueAsString(answer));
            answers.flush();
        }
    }

    private static HarnessOp op(String name) throws Exception {
        HarnessOp op = OPS.get(name);
        if (op == null) {
            if (!name.matches("[A-Za-z][A-Za-z0-9]*")) {
                throw new IllegalArgumentException("no op named '" + name + "'");
            }
            op = (HarnessOp) Class.forName(name + "Op").getDeclaredConstructor().newInstance();
            OPS.put(name, op);
        }
        return op;
    }
}
