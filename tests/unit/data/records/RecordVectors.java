// Generates (and checks) record-format test vectors with Apache Kafka's own Java client.
//
// Not part of the test run: tests use the committed output (java_vectors.json). To
// regenerate, with kafka-clients 4.3.1 and its runtime dependencies (lz4-java,
// snappy-java, zstd-jni, slf4j-api) in a directory $JARS:
//
//   javac -cp "$JARS/*" -d /tmp/rv RecordVectors.java
//   java -cp "/tmp/rv:$JARS/*" RecordVectors gen java_vectors.json
//
// "read FILE" decodes batches written by kafkalite (one hex batch buffer per line)
// with the Java client and prints one JSON object per line: the check that Java
// consumers read what kafkalite writes (tests/unit/test_records_java.py runs it when
// KAFKALITE_KAFKA_JARS points at such a directory).

import java.io.BufferedReader;
import java.io.FileReader;
import java.io.FileWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.utils.Utils;

public class RecordVectors {
    static String hex(ByteBuffer b) {
        if (b == null) return "null";
        StringBuilder sb = new StringBuilder("\"");
        ByteBuffer d = b.duplicate();
        while (d.hasRemaining()) sb.append(String.format("%02x", d.get() & 0xff));
        return sb.append('"').toString();
    }

    static String hex(byte[] b) {
        return b == null ? "null" : hex(ByteBuffer.wrap(b));
    }

    static String str(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        return sb.append('"').toString();
    }

    static String describe(MemoryRecords records) {
        StringBuilder sb = new StringBuilder("[");
        boolean firstBatch = true;
        for (MutableRecordBatch batch : records.batches()) {
            batch.ensureValid();
            if (!firstBatch) sb.append(",");
            firstBatch = false;
            sb.append("{\"magic\":").append(batch.magic())
              .append(",\"base_offset\":").append(batch.baseOffset())
              .append(",\"last_offset\":").append(batch.lastOffset())
              .append(",\"crc\":").append(batch.checksum())
              .append(",\"compression\":").append(batch.compressionType().id)
              .append(",\"timestamp_type\":").append(batch.timestampType().id)
              .append(",\"max_timestamp\":").append(batch.maxTimestamp())
              .append(",\"producer_id\":").append(batch.producerId())
              .append(",\"producer_epoch\":").append(batch.producerEpoch())
              .append(",\"base_sequence\":").append(batch.baseSequence())
              .append(",\"transactional\":").append(batch.isTransactional())
              .append(",\"control\":").append(batch.isControlBatch())
              .append(",\"partition_leader_epoch\":").append(batch.partitionLeaderEpoch())
              .append(",\"size\":").append(batch.sizeInBytes())
              .append(",\"records\":[");
            boolean first = true;
            for (Record r : batch) {
                if (!first) sb.append(",");
                first = false;
                sb.append("{\"offset\":").append(r.offset())
                  .append(",\"timestamp\":").append(r.timestamp())
                  .append(",\"key\":").append(hex(r.key()))
                  .append(",\"value\":").append(hex(r.value()))
                  .append(",\"headers\":[");
                boolean fh = true;
                for (Header h : r.headers()) {
                    if (!fh) sb.append(",");
                    fh = false;
                    sb.append("[").append(str(h.key())).append(",").append(hex(h.value())).append("]");
                }
                sb.append("]}");
            }
            sb.append("]}");
        }
        return sb.append("]").toString();
    }

    static Compression compression(int id) {
        return Compression.of(CompressionType.forId(id)).build();
    }

    static MemoryRecords build(byte magic, int codec, TimestampType tsType, long baseOffset, long logAppendTime,
                               long pid, short epoch, int seq, boolean txn, int records, Random rnd, boolean headers) {
        ByteBuffer buf = ByteBuffer.allocate(1 << 20);
        MemoryRecordsBuilder b = MemoryRecords.builder(buf, magic, compression(codec), tsType, baseOffset,
                logAppendTime, pid, epoch, seq, txn, magic >= 2 ? 7 : -1);
        long ts = 1700000000000L;
        for (int i = 0; i < records; i++) {
            byte[] key = (i % 4 == 1) ? null : ("key-" + i).getBytes(StandardCharsets.UTF_8);
            byte[] value = (i % 5 == 2) ? null : new byte[(i * 37) % 300];
            if (value != null) rnd.nextBytes(value);
            if (i % 7 == 3) value = new byte[0];
            Header[] hs = Record.EMPTY_HEADERS;
            if (headers && i % 3 == 0)
                hs = new Header[]{new RecordHeader("trace", new byte[]{1, 2}), new RecordHeader("trace", null),
                                  new RecordHeader("ключ", "v".getBytes(StandardCharsets.UTF_8))};
            if (magic >= 2) b.append(ts + (i * 13) % 50 - 10, key, value, hs);
            else b.append(ts + i, key, value);
        }
        return b.build();
    }

    static void gen(String out) throws Exception {
        StringBuilder sb = new StringBuilder("{\n\"murmur2\":[\n");
        List<byte[]> keys = new ArrayList<>();
        for (String s : new String[]{"", "21", "foobar", "a-little-bit-long-string", "a-little-bit-longer-string",
                "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", "abc", "k1", "order-42", "ü€𝄞"})
            keys.add(s.getBytes(StandardCharsets.UTF_8));
        Random rnd = new Random(20240531L);
        for (int i = 0; i < 200; i++) {
            byte[] k = new byte[rnd.nextInt(70)];
            rnd.nextBytes(k);
            keys.add(k);
        }
        for (int i = 0; i < keys.size(); i++) {
            byte[] k = keys.get(i);
            sb.append(i == 0 ? "" : ",\n").append("{\"key\":").append(hex(k))
              .append(",\"murmur2\":").append(Utils.murmur2(k)).append(",\"partitions\":{");
            int[] counts = {1, 3, 6, 10, 12, 100, 1000};
            for (int j = 0; j < counts.length; j++)
                sb.append(j == 0 ? "" : ",").append("\"").append(counts[j]).append("\":")
                  .append(BuiltInPartitioner.partitionForKey(k, counts[j]));
            sb.append("}}");
        }
        sb.append("\n],\n\"levels\":{");
        CompressionType[] leveled = {CompressionType.GZIP, CompressionType.LZ4, CompressionType.ZSTD};
        for (int i = 0; i < leveled.length; i++)
            sb.append(i == 0 ? "" : ",").append("\"").append(leveled[i].id).append("\":[")
              .append(leveled[i].minLevel()).append(",").append(leveled[i].maxLevel()).append(",")
              .append(leveled[i].defaultLevel()).append("]");
        sb.append("},\n\"batches\":[\n");
        List<String[]> cases = new ArrayList<>();
        Random data = new Random(7L);
        for (int codec = 0; codec <= 4; codec++) {
            cases.add(new String[]{"v2-codec" + codec, hexRecords(build((byte) 2, codec, TimestampType.CREATE_TIME, 0L, -1L,
                    -1L, (short) -1, -1, false, 40, data, true))});
            cases.add(new String[]{"v2-idempotent-codec" + codec, hexRecords(build((byte) 2, codec, TimestampType.CREATE_TIME,
                    1000L, -1L, 4242L, (short) 3, 17, false, 10, data, true))});
        }
        cases.add(new String[]{"v2-transactional-lz4", hexRecords(build((byte) 2, 3, TimestampType.CREATE_TIME, 50L, -1L,
                99L, (short) 1, 0, true, 5, data, false))});
        cases.add(new String[]{"v2-log-append-time", hexRecords(build((byte) 2, 0, TimestampType.LOG_APPEND_TIME, 7L,
                1700000099999L, -1L, (short) -1, -1, false, 6, data, true))});
        cases.add(new String[]{"v2-commit-marker", hexRecords(MemoryRecords.withEndTransactionMarker(120L, 1700000000123L, 5,
                99L, (short) 1, new EndTransactionMarker(ControlRecordType.COMMIT, 11)))});
        cases.add(new String[]{"v2-abort-marker", hexRecords(MemoryRecords.withEndTransactionMarker(121L, 1700000000124L, 5,
                99L, (short) 2, new EndTransactionMarker(ControlRecordType.ABORT, 12)))});
        for (byte magic = 0; magic <= 1; magic++) {
            for (int codec = 0; codec <= 3; codec++) {
                cases.add(new String[]{"v" + magic + "-codec" + codec, hexRecords(build(magic, codec, TimestampType.CREATE_TIME,
                        300L, -1L, -1L, (short) -1, -1, false, 8, data, false))});
            }
        }
        cases.add(new String[]{"v1-log-append-time-gzip", hexRecords(build((byte) 1, 1, TimestampType.LOG_APPEND_TIME,
                400L, 1700000055555L, -1L, (short) -1, -1, false, 5, data, false))});
        for (int i = 0; i < cases.size(); i++) {
            String[] c = cases.get(i);
            MemoryRecords mr = MemoryRecords.readableRecords(ByteBuffer.wrap(unhex(c[1])));
            sb.append(i == 0 ? "" : ",\n").append("{\"name\":").append(str(c[0])).append(",\"hex\":\"").append(c[1])
              .append("\",\"batches\":").append(describe(mr)).append("}");
        }
        sb.append("\n]\n}\n");
        try (FileWriter w = new FileWriter(out)) {
            w.write(sb.toString());
        }
    }

    static String hexRecords(MemoryRecords r) {
        ByteBuffer b = r.buffer();
        String h = hex(b);
        return h.substring(1, h.length() - 1);
    }

    static byte[] unhex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++)
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    static void read(String in) throws Exception {
        try (BufferedReader r = new BufferedReader(new FileReader(in))) {
            String line;
            while ((line = r.readLine()) != null) {
                line = line.trim();
                if (line.isEmpty()) continue;
                try {
                    System.out.println(describe(MemoryRecords.readableRecords(ByteBuffer.wrap(unhex(line)))));
                } catch (Exception e) {
                    System.out.println("{\"error\":" + str(e.toString()) + "}");
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("gen")) gen(args[1]);
        else read(args[1]);
    }
}
