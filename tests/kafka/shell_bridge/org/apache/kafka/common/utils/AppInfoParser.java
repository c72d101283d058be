package org.apache.kafka.common.utils;

/**
 * Bridge for a kafka-shell jar older than the server it runs with: Kafka 4.4 moved this class to
 * org.apache.kafka.common.utils.internals; the 4.3 shell reads the version and commit id there.
 */
public final class AppInfoParser {
    private AppInfoParser() {
    }

    public static String getVersion() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getVersion();
    }

    public static String getCommitId() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getCommitId();
    }
}
