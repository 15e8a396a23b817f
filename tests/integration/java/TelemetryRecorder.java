// A broker-side KIP-714 receiver for kafkalite's tests: records every client metrics
// push to the file named by the broker setting "kafkalite.telemetry.file", one line per
// push: client id, client instance id, terminating flag, content type, and the payload
// (the OTLP MetricsData the broker already decompressed) in base64. Compiled at test
// time with javac against the cached Kafka jars (tests/integration/telemetry_support.py).
//
// The broker hands out telemetry subscriptions only when a metrics reporter implementing
// ClientTelemetry is configured (metric.reporters) and a client-metrics resource matches.

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

@SuppressWarnings("deprecation")
public class TelemetryRecorder implements MetricsReporter, ClientTelemetry, ClientTelemetryReceiver {
    private volatile Path file;

    @Override
    public void configure(Map<String, ?> configs) {
        Object target = configs.get("kafkalite.telemetry.file");
        if (target == null) {
            throw new IllegalArgumentException("TelemetryRecorder needs kafkalite.telemetry.file");
        }
        file = Paths.get(target.toString());
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
    }

    @Override
    public void metricChange(KafkaMetric metric) {
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
    }

    @Override
    public void close() {
    }

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return this;
    }

    @Override
    public synchronized void exportMetrics(AuthorizableRequestContext context, ClientTelemetryPayload payload) {
        ByteBuffer data = payload.data().duplicate();
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        String line = context.clientId() + "\t" + payload.clientInstanceId() + "\t" + payload.isTerminating()
            + "\t" + payload.contentType() + "\t" + Base64.getEncoder().encodeToString(bytes) + "\n";
        try {
            Files.write(file, line.getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new RuntimeException("cannot record telemetry to " + file, e);
        }
    }
}
