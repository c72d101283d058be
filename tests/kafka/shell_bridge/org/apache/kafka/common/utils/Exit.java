package org.apache.kafka.common.utils;

/**
 * Bridge for a kafka-shell jar older than the server it runs with: Kafka 4.4 moved this class to
 * org.apache.kafka.common.utils.internals; the calls the 4.3 shell makes go there.
 */
public final class Exit {
    private Exit() {
    }

    public static void exit(int statusCode) {
        org.apache.kafka.common.utils.internals.Exit.exit(statusCode);
    }

    public static void addShutdownHook(String name, Runnable runnable) {
        org.apache.kafka.common.utils.internals.Exit.addShutdownHook(name, runnable);
    }
}
