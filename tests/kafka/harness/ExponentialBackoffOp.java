import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;

/**
 * {"op": "ExponentialBackoff", "cases": [[initial, max, attempts, jitter], ...]}: what Kafka's
 * ExponentialBackoff(initial, 2, max, jitter).backoff(attempts) gives for each case: the formula
 * of the reconnect backoff and of the connection setup timeout (ClusterConnectionStates). Its
 * jitter draws from ThreadLocalRandom, so a case with a jitter is asked 200 times and answered
 * with the [smallest, largest] value seen; a case without one with the value itself. The class
 * moved to org.apache.kafka.common.utils.internals in 4.4: it is found by reflection.
 */
public final class ExponentialBackoffOp implements HarnessOp {
    @Override
    public JsonNode apply(JsonNode request, ObjectMapper mapper) {
        try {
            return cases(request, mapper);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Class<?> backoffClass() throws ClassNotFoundException {
        try {
            return Class.forName("org.apache.kafka.common.utils.internals.ExponentialBackoff");
        } catch (ClassNotFoundException e) {
            return Class.forName("org.apache.kafka.common.utils.ExponentialBackoff");
        }
    }

    private static JsonNode cases(JsonNode request, ObjectMapper mapper) throws ReflectiveOperationException {
        Class<?> cls = backoffClass();
        Constructor<?> make = cls.getConstructor(long.class, int.class, long.class, double.class);
        Method backoffOf = cls.getMethod("backoff", long.class);
        ArrayNode out = mapper.createArrayNode();
        for (JsonNode c : request.get("cases")) {
            double jitter = c.get(3).asDouble();
            Object backoff = make.newInstance(c.get(0).asLong(), 2, c.get(1).asLong(), jitter);
            long attempts = c.get(2).asLong();
            if (jitter == 0) {
                out.add((long) backoffOf.invoke(backoff, attempts));
                continue;
            }
            long low = Long.MAX_VALUE;
            long high = Long.MIN_VALUE;
            for (int i = 0; i < 200; i++) {
                long value = (long) backoffOf.invoke(backoff, attempts);
                low = Math.min(low, value);
                high = Math.max(high, value);
            }
            ArrayNode range = out.addArray();
            range.add(low);
            range.add(high);
        }
        return out;
    }
}
