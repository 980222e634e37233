package kafkachaos;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * kafka-chaos's driver of Kafka's Java client: one producer or one consumer, printing one
 * JSON object per event on stdout in the vocabulary of Kafka's VerifiableProducer and
 * VerifiableConsumer, with the fields a kafka-chaos history needs added (message ids, send
 * times, resume offsets, lost apart from revoked, commit modes). docs/HISTORY.md lists the
 * events; harness/workload/java_events.py reads them. SIGTERM stops it: a producer stops
 * sending and waits for every outstanding send's outcome, a consumer leaves its group; both
 * print shutdown_complete last.
 *
 * <p>Usage: {@code producer --bootstrap B --topic T --name N --partitions 0,1,2 --rate R
 * [--set key=value]...} or {@code consumer --bootstrap B --topic T --name N --partitions
 * 0,1,2 [--group G --commit none|sync|async] [--process-ms M] [--set key=value]...}
 */
public final class Driver {
    private static final PrintStream OUT = new PrintStream(
            new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false,
            StandardCharsets.UTF_8);
    private static volatile boolean stopping = false;

    private Driver() {
    }

    public static void main(String[] args) throws Exception {
        Args parsed = Args.parse(args);
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            try {
                done.await(parsed.shutdownSeconds, TimeUnit.SECONDS);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }, "shutdown"));
        try {
            if (parsed.role.equals("producer")) {
                produce(parsed);
            } else {
                consume(parsed);
            }
            emit(new Json("shutdown_complete"));
        } finally {
            done.countDown();
        }
    }

    // ------------------------------------------------------------------------ producer

    private static void produce(Args args) {
        Properties props = args.clientProperties();
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        emit(new Json("startup_complete").config(new ProducerConfig(props).values()));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            long interval = (long) (1e9 / args.rate);
            long next = System.nanoTime();
            for (long seq = 0; !stopping; seq++) {
                int partition = args.partitions.get((int) (seq % args.partitions.size()));
                String messageId = args.name + "-" + seq;
                long sendTs = System.currentTimeMillis();
                final long thisSeq = seq;
                // KafkaProducer.send() reports some refusals (no metadata within max.block.ms,
                // a record too large) by calling the callback before it returns: those
                // records never entered the producer's buffer, so they are certainly unsent.
                // Every other outcome arrives on the producer's I/O thread.
                Thread caller = Thread.currentThread();
                boolean[] inSend = {true};
                try {
                    producer.send(new ProducerRecord<>(args.topic, partition, null, messageId), (meta, error) -> {
                        Json event = new Json(error == null ? "producer_send_success" : "producer_send_error")
                                .put("message_id", messageId).put("seq", thisSeq).put("topic", args.topic)
                                .put("partition", partition).put("send_ts", sendTs);
                        emit(error == null ? event.put("offset", meta.offset()) : failed(event, error,
                                !(inSend[0] && Thread.currentThread() == caller)));
                    });
                } catch (RuntimeException error) { // send() itself threw: never left the client
                    emit(failed(new Json("producer_send_error").put("message_id", messageId).put("seq", seq)
                            .put("topic", args.topic).put("partition", partition).put("send_ts", sendTs),
                            error, false));
                } finally {
                    inSend[0] = false;
                }
                next += interval;
                long now = System.nanoTime();
                if (next < now) {
                    next = now; // behind: no burst to catch up, as the librdkafka producer
                }
                while (!stopping && (now = System.nanoTime()) < next) {
                    LockSupport.parkNanos(next - now);
                }
            }
            producer.flush(); // every send ends acknowledged or failed (delivery.timeout.ms bounds it)
        }
    }

    private static Json failed(Json event, Exception error, boolean sent) {
        return event.put("exception", error.getClass().getSimpleName())
                .put("message", String.valueOf(error.getMessage())).put("sent", sent);
    }

    // ------------------------------------------------------------------------ consumer

    private static void consume(Args args) {
        Properties props = args.clientProperties();
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if (args.group != null) {
            props.put(ConsumerConfig.GROUP_ID_CONFIG, args.group);
        }
        emit(new Json("startup_complete").config(new ConsumerConfig(props).values()));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            if (args.group == null) {
                List<TopicPartition> all = new ArrayList<>();
                for (int p : args.partitions) {
                    all.add(new TopicPartition(args.topic, p));
                }
                consumer.assign(all);
                consumer.seekToBeginning(all);
            } else {
                consumer.subscribe(List.of(args.topic), new Rebalances(consumer));
            }
            while (!stopping) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    if (args.processMs > 0) {
                        LockSupport.parkNanos(args.processMs * 1_000_000L);
                    }
                    emit(new Json("record_data").put("topic", record.topic()).put("partition", record.partition())
                            .put("offset", record.offset()).put("value", text(record.value())));
                    processed.put(new TopicPartition(record.topic(), record.partition()),
                            new OffsetAndMetadata(record.offset() + 1));
                }
                if (!processed.isEmpty()) {
                    commit(consumer, args.commit, processed);
                }
            }
        }
    }

    private static void commit(KafkaConsumer<byte[], byte[]> consumer, String mode,
                               Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (mode.equals("sync")) {
            try {
                consumer.commitSync(offsets);
                emit(commitEvent(mode, offsets, null));
            } catch (RuntimeException error) {
                emit(commitEvent(mode, offsets, error));
            }
        } else if (mode.equals("async")) {
            consumer.commitAsync(offsets, (committed, error) -> emit(commitEvent(mode, offsets, error)));
        }
    }

    private static Json commitEvent(String mode, Map<TopicPartition, OffsetAndMetadata> offsets, Exception error) {
        List<Json> parts = new ArrayList<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : new TreeMap<>(byName(offsets)).values()) {
            parts.add(new Json(null).put("topic", e.getKey().topic()).put("partition", e.getKey().partition())
                    .put("offset", e.getValue().offset()));
        }
        Json event = new Json("offsets_committed").put("mode", mode).list("partitions", parts);
        return error == null ? event : event.put("error", error.getClass().getSimpleName() + ": " + error.getMessage());
    }

    private static Map<String, Map.Entry<TopicPartition, OffsetAndMetadata>> byName(
            Map<TopicPartition, OffsetAndMetadata> offsets) {
        Map<String, Map.Entry<TopicPartition, OffsetAndMetadata>> out = new HashMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            out.put(String.format("%s-%010d", e.getKey().topic(), e.getKey().partition()), e);
        }
        return out;
    }

    /** Group membership as the member saw it, with the committed offsets it resumes from. */
    private static final class Rebalances implements ConsumerRebalanceListener {
        private final KafkaConsumer<byte[], byte[]> consumer;

        Rebalances(KafkaConsumer<byte[], byte[]> consumer) {
            this.consumer = consumer;
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            Map<TopicPartition, OffsetAndMetadata> committed = partitions.isEmpty() ? Map.of()
                    : consumer.committed(new HashSet<>(partitions), Duration.ofSeconds(60));
            List<Json> parts = new ArrayList<>();
            for (TopicPartition tp : partitions) {
                Json part = new Json(null).put("topic", tp.topic()).put("partition", tp.partition());
                OffsetAndMetadata resume = committed.get(tp);
                parts.add(resume == null ? part : part.put("resume_offset", resume.offset()));
            }
            emit(new Json("partitions_assigned").list("partitions", parts));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            emit(new Json("partitions_revoked").list("partitions", named(partitions)));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            emit(new Json("partitions_lost").list("partitions", named(partitions)));
        }

        private static List<Json> named(Collection<TopicPartition> partitions) {
            List<Json> parts = new ArrayList<>();
            for (TopicPartition tp : partitions) {
                parts.add(new Json(null).put("topic", tp.topic()).put("partition", tp.partition()));
            }
            return parts;
        }
    }

    private static String text(byte[] value) {
        if (value == null) {
            return null;
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(value)).toString();
        } catch (java.nio.charset.CharacterCodingException notText) {
            return null;
        }
    }

    /** One event line, written whole and flushed, from whichever client thread has it. */
    private static void emit(Json event) {
        String line = event.put("timestamp", System.currentTimeMillis()).toString();
        synchronized (OUT) {
            OUT.print(line);
            OUT.print('\n');
            OUT.flush();
        }
    }

    // ------------------------------------------------------------------ the arguments

    private static final class Args {
        String role;
        String bootstrap;
        String topic;
        String name;
        List<Integer> partitions = new ArrayList<>();
        double rate = 200;
        String group;
        String commit = "none";
        long processMs;
        long shutdownSeconds = 120;
        Map<String, String> settings = new TreeMap<>();

        static Args parse(String[] argv) {
            Args args = new Args();
            if (argv.length == 0 || !(argv[0].equals("producer") || argv[0].equals("consumer"))) {
                throw new IllegalArgumentException("first argument must be producer or consumer");
            }
            args.role = argv[0];
            for (int i = 1; i < argv.length; i += 2) {
                if (i + 1 >= argv.length) {
                    throw new IllegalArgumentException("option " + argv[i] + " has no value");
                }
                String value = argv[i + 1];
                switch (argv[i]) {
                    case "--bootstrap" -> args.bootstrap = value;
                    case "--topic" -> args.topic = value;
                    case "--name" -> args.name = value;
                    case "--partitions" -> {
                        for (String p : value.split(",")) {
                            args.partitions.add(Integer.parseInt(p));
                        }
                    }
                    case "--rate" -> args.rate = Double.parseDouble(value);
                    case "--group" -> args.group = value;
                    case "--commit" -> args.commit = value;
                    case "--process-ms" -> args.processMs = Long.parseLong(value);
                    case "--shutdown-s" -> args.shutdownSeconds = Long.parseLong(value);
                    case "--set" -> {
                        int eq = value.indexOf('=');
                        if (eq <= 0) {
                            throw new IllegalArgumentException("--set needs key=value, not " + value);
                        }
                        args.settings.put(value.substring(0, eq), value.substring(eq + 1));
                    }
                    default -> throw new IllegalArgumentException("unknown option " + argv[i]);
                }
            }
            if (args.bootstrap == null || args.topic == null || args.name == null || args.partitions.isEmpty()) {
                throw new IllegalArgumentException("--bootstrap, --topic, --name and --partitions are required");
            }
            return args;
        }

        Properties clientProperties() {
            Properties props = new Properties();
            props.putAll(settings);
            props.put("bootstrap.servers", bootstrap);
            props.put("client.id", "kafka-chaos-" + role + "-" + name);
            return props;
        }
    }

    // ------------------------------------------------------------------------- JSON

    /** A flat JSON object built in order; values are strings, numbers, booleans, lists. */
    private static final class Json {
        private final StringBuilder body = new StringBuilder("{");

        Json(String name) {
            if (name != null) {
                put("name", name);
            }
        }

        Json put(String key, Object value) {
            if (body.length() > 1) {
                body.append(',');
            }
            quote(body, key).append(':');
            if (value == null) {
                body.append("null");
            } else if (value instanceof Number || value instanceof Boolean) {
                body.append(value);
            } else if (value instanceof Json || value instanceof Raw) {
                body.append(value);
            } else {
                quote(body, value.toString());
            }
            return this;
        }

        Json list(String key, List<Json> items) {
            StringBuilder array = new StringBuilder("[");
            for (int i = 0; i < items.size(); i++) {
                array.append(i == 0 ? "" : ",").append(items.get(i));
            }
            return put(key, new Raw(array.append(']').toString()));
        }

        Json config(Map<String, ?> values) {
            Json config = new Json(null);
            for (Map.Entry<String, ?> e : new TreeMap<>(values).entrySet()) {
                Object v = e.getValue();
                config.put(e.getKey(), v instanceof Class<?> c ? c.getName() : String.valueOf(v));
            }
            return put("config", config);
        }

        private static StringBuilder quote(StringBuilder out, String text) {
            out.append('"');
            for (int i = 0; i < text.length(); i++) {
                char c = text.charAt(i);
                switch (c) {
                    case '"' -> out.append("\\\"");
                    case '\\' -> out.append("\\\\");
                    case '\n' -> out.append("\\n");
                    case '\r' -> out.append("\\r");
                    case '\t' -> out.append("\\t");
                    default -> {
                        if (c < 0x20) {
                            out.append(String.format("\\u%04x", (int) c));
                        } else {
                            out.append(c);
                        }
                    }
                }
            }
            return out.append('"');
        }

        @Override
        public String toString() {
            return body + "}";
        }
    }

    /** Text already in JSON form (a list), written as it is. */
    private record Raw(String json) {
        @Override
        public String toString() {
            return json;
        }
    }
}
