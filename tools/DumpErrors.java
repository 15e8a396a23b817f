// Prints Kafka's error table (tools/kafka-protocol/errors.tsv) from the Errors enum of the
// kafka-clients jar on the class path: code, name, the Java exception's simple name,
// whether the Java client treats it as retriable, and the exception's class chain up to
// KafkaException. Run by tools/update_protocol.py; never by hand.
import org.apache.kafka.common.protocol.Errors;
public class DumpErrors {
    public static void main(String[] args) {
        for (Errors e : Errors.values()) {
            Throwable ex = e.exception();
            String cls = ex == null ? "" : ex.getClass().getSimpleName();
            boolean retriable = ex instanceof org.apache.kafka.common.errors.RetriableException;
            StringBuilder chain = new StringBuilder();
            if (ex != null) {
                Class<?> c = ex.getClass();
                while (c != null && c != RuntimeException.class && c != Exception.class && c != Throwable.class) {
                    if (chain.length() > 0) chain.append('>');
                    chain.append(c.getSimpleName());
                    c = c.getSuperclass();
                }
            }
            System.out.println(e.code() + "\t" + e.name() + "\t" + cls + "\t" + retriable + "\t" + chain);
        }
    }
}
