// Generates assignor and consumer-protocol test vectors with Apache Kafka's own Java
// client (kafka-clients 4.3.1).
//
// Not part of the test run: tests/unit/test_assignor_java.py uses the committed output
// (java_vectors.json). To regenerate, with kafka-clients 4.3.1 and slf4j-api in $JARS
// (the broker's libs/ directory from `python -m kafkalite.testing fetch` has both):
//
//   javac -cp "$JARS/*" -d /tmp/av AssignorVectors.java
//   java -cp "/tmp/av:$JARS/*" AssignorVectors java_vectors.json
//
// Every scenario records its full input (so Python needs no Java random numbers) and
// what Java's assignor returned for it, through the public assign(Cluster,
// GroupSubscription) entry point the Java group leader uses.

import java.io.FileWriter;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

public class AssignorVectors {
    static final String[] RACKS = {"a", "b", "c", "d"};

    // ------------------------------------------------------------------ JSON output

    static String str(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String hex(ByteBuffer buf) {
        if (buf == null) return "null";
        ByteBuffer b = buf.duplicate();
        StringBuilder s = new StringBuilder("\"");
        while (b.hasRemaining()) s.append(String.format("%02x", b.get()));
        return s.append('"').toString();
    }

    static String tps(List<TopicPartition> parts) {
        List<String> names = new ArrayList<>();
        for (TopicPartition tp : parts) names.add(str(tp.topic() + "-" + tp.partition()));
        Collections.sort(names);
        return "[" + String.join(",", names) + "]";
    }

    static String strs(List<String> xs) {
        List<String> out = new ArrayList<>();
        for (String x : xs) out.add(str(x));
        return "[" + String.join(",", out) + "]";
    }

    // ------------------------------------------------------------------ scenarios

    static final class Member {
        List<String> topics = new ArrayList<>();
        List<TopicPartition> owned = new ArrayList<>();
        int generation = -1;
        String rack;
        String instance;
        ByteBuffer userData;
    }

    static final class Scenario {
        String name;
        String assignor;
        Map<String, Integer> partitions = new TreeMap<>();
        int replication;         // 0: partitions have no replica racks
        int brokerRacks;
        Map<String, Member> members = new TreeMap<>();
    }

    static Map<TopicPartition, List<String>> partitionRacks(Scenario s) {
        Map<TopicPartition, List<String>> out = new LinkedHashMap<>();
        if (s.replication == 0) return out;
        int offset = 0;
        for (Map.Entry<String, Integer> e : s.partitions.entrySet()) {
            for (int p = 0; p < e.getValue(); p++) {
                List<String> racks = new ArrayList<>();
                for (int r = 0; r < s.replication; r++) racks.add(RACKS[(p + r + offset) % s.brokerRacks]);
                out.put(new TopicPartition(e.getKey(), p), racks);
            }
            offset += e.getValue();
        }
        return out;
    }

    static Cluster cluster(Scenario s) {
        Map<TopicPartition, List<String>> racks = partitionRacks(s);
        Map<String, Node> nodes = new HashMap<>();
        for (int i = 0; i < RACKS.length; i++) nodes.put(RACKS[i], new Node(i, "h" + i, 9092, RACKS[i]));
        Node noRack = new Node(9, "h9", 9092, null);
        List<PartitionInfo> infos = new ArrayList<>();
        for (Map.Entry<String, Integer> e : s.partitions.entrySet()) {
            for (int p = 0; p < e.getValue(); p++) {
                TopicPartition tp = new TopicPartition(e.getKey(), p);
                Node[] replicas;
                if (racks.containsKey(tp)) {
                    List<String> rs = racks.get(tp);
                    replicas = new Node[rs.size()];
                    for (int i = 0; i < rs.size(); i++) replicas[i] = nodes.get(rs.get(i));
                } else {
                    replicas = new Node[] {noRack};
                }
                infos.add(new PartitionInfo(tp.topic(), p, replicas[0], replicas, replicas));
            }
        }
        List<Node> all = new ArrayList<>(nodes.values());
        all.add(noRack);
        return new Cluster("c", all, infos, Collections.emptySet(), Collections.emptySet());
    }

    static Map<String, List<TopicPartition>> run(ConsumerPartitionAssignor assignor, Scenario s) {
        Map<String, Subscription> subs = new HashMap<>();
        for (Map.Entry<String, Member> e : s.members.entrySet()) {
            Member m = e.getValue();
            // eager members revoke everything before rejoining: they send no owned partitions
            List<TopicPartition> owned = s.assignor.equals("sticky") ? List.of() : m.owned;
            Subscription sub = new Subscription(m.topics, m.userData == null ? null : m.userData.duplicate(),
                owned, m.generation, Optional.ofNullable(m.rack));
            sub.setGroupInstanceId(Optional.ofNullable(m.instance));
            subs.put(e.getKey(), sub);
        }
        Map<String, Assignment> result = assignor.assign(cluster(s), new GroupSubscription(subs)).groupAssignment();
        Map<String, List<TopicPartition>> out = new TreeMap<>();
        for (Map.Entry<String, Assignment> e : result.entrySet()) out.put(e.getKey(), e.getValue().partitions());
        return out;
    }

    static String json(Scenario s, Map<String, List<TopicPartition>> result) {
        StringBuilder b = new StringBuilder();
        b.append("{\"name\":").append(str(s.name)).append(",\"assignor\":").append(str(s.assignor));
        b.append(",\"partitions\":{");
        List<String> parts = new ArrayList<>();
        for (Map.Entry<String, Integer> e : s.partitions.entrySet()) parts.add(str(e.getKey()) + ":" + e.getValue());
        b.append(String.join(",", parts)).append("}");
        b.append(",\"partition_racks\":{");
        parts.clear();
        for (Map.Entry<TopicPartition, List<String>> e : partitionRacks(s).entrySet())
            parts.add(str(e.getKey().topic() + "-" + e.getKey().partition()) + ":" + strs(e.getValue()));
        b.append(String.join(",", parts)).append("}");
        b.append(",\"members\":{");
        parts.clear();
        for (Map.Entry<String, Member> e : s.members.entrySet()) {
            Member m = e.getValue();
            parts.add(str(e.getKey()) + ":{\"topics\":" + strs(m.topics) + ",\"owned\":" + tps(m.owned)
                + ",\"generation\":" + m.generation + ",\"rack\":" + str(m.rack) + ",\"instance\":" + str(m.instance)
                + ",\"user_data\":" + hex(m.userData) + "}");
        }
        b.append(String.join(",", parts)).append("}");
        b.append(",\"result\":{");
        parts.clear();
        for (Map.Entry<String, List<TopicPartition>> e : result.entrySet()) parts.add(str(e.getKey()) + ":" + tps(e.getValue()));
        b.append(String.join(",", parts)).append("}}");
        return b.toString();
    }

    static Scenario random(Random rnd, String name, String assignor, boolean racks, boolean statics) {
        Scenario s = new Scenario();
        s.name = name;
        s.assignor = assignor;
        int nTopics = 1 + rnd.nextInt(4);
        for (int t = 0; t < nTopics; t++) s.partitions.put("t" + t, rnd.nextInt(9));
        if (racks) {
            s.brokerRacks = 2 + rnd.nextInt(2);
            s.replication = 1 + rnd.nextInt(s.brokerRacks);
        }
        int nMembers = 1 + rnd.nextInt(6);
        List<String> topics = new ArrayList<>(s.partitions.keySet());
        boolean same = rnd.nextBoolean();
        for (int i = 0; i < nMembers; i++) {
            Member m = new Member();
            if (same) m.topics.addAll(topics);
            else {
                for (String t : topics) if (rnd.nextInt(3) > 0) m.topics.add(t);
                if (m.topics.isEmpty()) m.topics.add(topics.get(rnd.nextInt(topics.size())));
            }
            if (racks && rnd.nextInt(5) > 0) m.rack = RACKS[rnd.nextInt(RACKS.length)];
            if (statics && rnd.nextBoolean()) m.instance = "instance-" + (char) ('z' - i * 3 % 26);
            // member ids in a random order relative to the instance ids
            s.members.put("consumer-" + Integer.toString(rnd.nextInt(1000), 36) + "-" + i, m);
        }
        return s;
    }

    // ------------------------------------------------------------------ main

    public static void main(String[] args) throws Exception {
        List<String> scenarios = new ArrayList<>();
        Random rnd = new Random(20240601);
        RangeAssignor range = new RangeAssignor();
        RoundRobinAssignor rr = new RoundRobinAssignor();

        for (int i = 0; i < 150; i++) {
            Scenario s = random(rnd, "range-" + i, "range", i % 2 == 1, i % 3 == 0);
            scenarios.add(json(s, run(range, s)));
        }
        for (int i = 0; i < 100; i++) {
            Scenario s = random(rnd, "roundrobin-" + i, "roundrobin", false, i % 2 == 0);
            scenarios.add(json(s, run(rr, s)));
        }
        // Java String.compareTo order (UTF-16 units) differs from code point order here.
        {
            Scenario s = new Scenario();
            s.name = "range-utf16-order";
            s.assignor = "range";
            s.partitions.put("t0", 5);
            for (String id : new String[] {"m-\uD83D\uDE00", "m-\uFF5E", "m-a"}) {
                Member m = new Member();
                m.topics.add("t0");
                s.members.put(id, m);
            }
            scenarios.add(json(s, run(range, s)));
            s.name = "roundrobin-utf16-order";
            s.assignor = "roundrobin";
            scenarios.add(json(s, run(rr, s)));
        }

        // Sticky assignors: a fresh assignment, then a rebalance after membership changes
        // with the owned partitions / user data Java members would send.
        for (String kind : new String[] {"sticky", "cooperative-sticky"}) {
            for (int i = 0; i < 60; i++) {
                Scenario s = random(rnd, kind + "-" + i + "-fresh", kind, i % 4 == 3, false);
                ConsumerPartitionAssignor a = kind.equals("sticky") ? new StickyAssignor() : new CooperativeStickyAssignor();
                Map<String, List<TopicPartition>> first = run(a, s);
                scenarios.add(json(s, first));
                // second round: drop a member, add one, keep what the others own
                Scenario s2 = new Scenario();
                s2.name = kind + "-" + i + "-rebalance";
                s2.assignor = kind;
                s2.partitions.putAll(s.partitions);
                s2.replication = s.replication;
                s2.brokerRacks = s.brokerRacks;
                List<String> ids = new ArrayList<>(s.members.keySet());
                String gone = ids.size() > 1 ? ids.get(rnd.nextInt(ids.size())) : null;
                for (String id : ids) {
                    if (id.equals(gone)) continue;
                    Member old = s.members.get(id);
                    Member m = new Member();
                    m.topics.addAll(old.topics);
                    m.rack = old.rack;
                    int gen = 5;
                    if (kind.equals("sticky")) {
                        StickyAssignor member = new StickyAssignor();
                        member.onAssignment(new Assignment(first.get(id)),
                            new ConsumerGroupMetadata("g", gen, id, Optional.empty()));
                        m.userData = member.subscriptionUserData(new HashSet<>(m.topics));
                        m.owned = first.get(id);  // recorded for the checks; not sent (see run)
                    } else {
                        m.owned = first.get(id);
                        m.generation = gen;
                        CooperativeStickyAssignor member = new CooperativeStickyAssignor();
                        member.onAssignment(new Assignment(first.get(id)),
                            new ConsumerGroupMetadata("g", gen, id, Optional.empty()));
                        m.userData = member.subscriptionUserData(new HashSet<>(m.topics));
                    }
                    s2.members.put(id, m);
                }
                if (rnd.nextBoolean()) {
                    Member m = new Member();
                    m.topics.addAll(s.partitions.keySet());
                    s2.members.put("consumer-new-" + i, m);
                }
                ConsumerPartitionAssignor a2 = kind.equals("sticky") ? new StickyAssignor() : new CooperativeStickyAssignor();
                scenarios.add(json(s2, run(a2, s2)));
            }
        }

        // ---- consumer protocol bytes
        List<String> wire = new ArrayList<>();
        List<TopicPartition> owned = List.of(new TopicPartition("b", 2), new TopicPartition("a", 1),
            new TopicPartition("b", 0), new TopicPartition("a", 0));
        Subscription full = new Subscription(List.of("b", "a"), ByteBuffer.wrap(new byte[] {1, 2, 3}), owned, 7, Optional.of("rack-1"));
        Subscription bare = new Subscription(List.of("orders"), null, List.of(), -1, Optional.empty());
        Subscription emptyRack = new Subscription(List.of("x"), ByteBuffer.allocate(0), List.of(), 3, Optional.of(""));
        for (short v = 0; v <= 3; v++) {
            wire.add("{\"kind\":\"subscription\",\"name\":\"full\",\"version\":" + v + ",\"hex\":" + hex(ConsumerProtocol.serializeSubscription(full, v)) + "}");
            wire.add("{\"kind\":\"subscription\",\"name\":\"bare\",\"version\":" + v + ",\"hex\":" + hex(ConsumerProtocol.serializeSubscription(bare, v)) + "}");
            wire.add("{\"kind\":\"subscription\",\"name\":\"empty-rack\",\"version\":" + v + ",\"hex\":" + hex(ConsumerProtocol.serializeSubscription(emptyRack, v)) + "}");
        }
        Assignment asg = new Assignment(List.of(new TopicPartition("b", 1), new TopicPartition("a", 0), new TopicPartition("b", 0)),
            ByteBuffer.wrap(new byte[] {9}));
        Assignment emptyAsg = new Assignment(List.of(), null);
        for (short v = 0; v <= 3; v++) {
            wire.add("{\"kind\":\"assignment\",\"name\":\"some\",\"version\":" + v + ",\"hex\":" + hex(ConsumerProtocol.serializeAssignment(asg, v)) + "}");
            wire.add("{\"kind\":\"assignment\",\"name\":\"empty\",\"version\":" + v + ",\"hex\":" + hex(ConsumerProtocol.serializeAssignment(emptyAsg, v)) + "}");
        }
        // what Java decodes from a subscription of a future version 9 with a trailing field
        ByteBuffer future = ConsumerProtocol.serializeSubscription(full, (short) 3);
        ByteBuffer bigger = ByteBuffer.allocate(future.remaining() + 4);
        bigger.put(future.duplicate()).putInt(0x01020304).flip();
        bigger.putShort(0, (short) 9);
        Subscription decoded = ConsumerProtocol.deserializeSubscription(bigger.duplicate());
        wire.add("{\"kind\":\"future-subscription\",\"hex\":" + hex(bigger) + ",\"topics\":" + strs(decoded.topics())
            + ",\"owned\":" + tps(decoded.ownedPartitions()) + ",\"generation\":" + decoded.generationId().orElse(-1)
            + ",\"rack\":" + str(decoded.rackId().orElse(null)) + "}");

        // ---- assignor user data
        for (int gen : new int[] {-1, 0, 1, 42, Integer.MAX_VALUE}) {
            CooperativeStickyAssignor c = new CooperativeStickyAssignor();
            if (gen >= 0) c.onAssignment(new Assignment(List.of()), new ConsumerGroupMetadata("g", gen, "m", Optional.empty()));
            wire.add("{\"kind\":\"cooperative-user-data\",\"generation\":" + gen + ",\"hex\":" + hex(c.subscriptionUserData(Set.of("t"))) + "}");
        }
        StickyAssignor fresh = new StickyAssignor();
        wire.add("{\"kind\":\"sticky-user-data\",\"name\":\"fresh\",\"hex\":" + hex(fresh.subscriptionUserData(Set.of("t"))) + "}");
        StickyAssignor one = new StickyAssignor();
        one.onAssignment(new Assignment(List.of(new TopicPartition("orders", 3), new TopicPartition("orders", 1))),
            new ConsumerGroupMetadata("g", 12, "m", Optional.empty()));
        wire.add("{\"kind\":\"sticky-user-data\",\"name\":\"one-topic\",\"generation\":12,\"owned\":"
            + tps(List.of(new TopicPartition("orders", 3), new TopicPartition("orders", 1)))
            + ",\"hex\":" + hex(one.subscriptionUserData(Set.of("orders"))) + "}");

        try (FileWriter w = new FileWriter(args[0])) {
            w.write("{\"java_client\":\"4.3.1\",\n\"scenarios\":[\n");
            w.write(String.join(",\n", scenarios));
            w.write("\n],\n\"wire\":[\n");
            w.write(String.join(",\n", wire));
            w.write("\n]}\n");
        }
    }
}
