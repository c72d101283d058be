import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.metadata.authorizer.StandardAcl;
import org.apache.kafka.metadata.authorizer.StandardAuthorizer;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {"op": "StandardAuthorize", "acls": [[resourceType, name, patternType, principal, host,
 * operation, permissionType], ...], "super_users": "User:a;User:b", "allow_everyone": bool,
 * "requests": [[principal, clientAddress, operation, resourceType, name], ...]}: Kafka's
 * StandardAuthorizer, configured and loaded with those ACLs, answers each request with true
 * (ALLOWED) or false; "host" in the answer is the client address as Kafka compares it.
 */
public final class StandardAuthorizeOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) throws Exception {
        StandardAuthorizer authorizer = new StandardAuthorizer();
        // its authorize() records metrics: a registry of its own, closed with it
        Metrics metrics = new Metrics();
        authorizer.withPluginMetrics(new PluginMetricsImpl(metrics, new HashMap<>()));
        Map<String, Object> configs = new HashMap<>();
        configs.put("super.users", request.get("super_users").asText());
        configs.put("allow.everyone.if.no.acl.found", request.get("allow_everyone").asText());
        authorizer.configure(configs);
        Map<Uuid, StandardAcl> acls = new HashMap<>();
        for (JsonNode a : request.get("acls")) {
            acls.put(Uuid.randomUuid(), new StandardAcl(ResourceType.fromCode((byte) a.get(0).asInt()),
                a.get(1).asText(), PatternType.fromCode((byte) a.get(2).asInt()), a.get(3).asText(),
                a.get(4).asText(), AclOperation.fromCode((byte) a.get(5).asInt()),
                AclPermissionType.fromCode((byte) a.get(6).asInt())));
        }
        authorizer.loadSnapshot(acls);
        authorizer.completeInitialLoad();
        ArrayNode out = mapper.createArrayNode();
        for (JsonNode r : request.get("requests")) {
            String principal = r.get(0).asText();
            int colon = principal.indexOf(':');
            KafkaPrincipal kafkaPrincipal = new KafkaPrincipal(principal.substring(0, colon), principal.substring(colon + 1));
            InetAddress address = InetAddress.getByName(r.get(1).asText());
            List<Action> actions = new ArrayList<>();
            actions.add(new Action(AclOperation.fromCode((byte) r.get(2).asInt()),
                new ResourcePattern(ResourceType.fromCode((byte) r.get(3).asInt()), r.get(4).asText(), PatternType.LITERAL),
                1, false, false));
            AuthorizationResult result = authorizer.authorize(context(kafkaPrincipal, address), actions).get(0);
            ArrayNode answer = out.addArray();
            answer.add(result == AuthorizationResult.ALLOWED);
            answer.add(address.getHostAddress());
        }
        authorizer.close();
        metrics.close();
        return out;
    }

    private static AuthorizableRequestContext context(KafkaPrincipal principal, InetAddress address) {
        return new AuthorizableRequestContext() {
            @Override public String listenerName() { return "PLAINTEXT"; }
            @Override public SecurityProtocol securityProtocol() { return SecurityProtocol.PLAINTEXT; }
            @Override public KafkaPrincipal principal() { return principal; }
            @Override public InetAddress clientAddress() { return address; }
            @Override public int requestType() { return 0; }
            @Override public int requestVersion() { return 0; }
            @Override public String clientId() { return "differential"; }
            @Override public int correlationId() { return 0; }
        };
    }
}
