package kafka.tools;

/**
 * Bridge for a kafka-shell jar older than the server it runs with: the shell of Kafka 4.3 catches
 * this class of the 4.3 server jar, which 4.4 removed. Only its message is read.
 */
public class TerseFailure extends RuntimeException {
    public TerseFailure(String message) {
        super(message);
    }
}
