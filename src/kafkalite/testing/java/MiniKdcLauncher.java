import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;

import kafka.security.minikdc.MiniKdc;
import org.apache.directory.server.kerberos.kdc.KdcServer;
import org.apache.directory.server.protocol.shared.transport.Transport;
import org.apache.mina.core.filterchain.IoFilterAdapter;
import org.apache.mina.core.session.IoSession;

/**
 * Kafka's MiniKdc, with two fixes to the Apache Directory Server KDC it runs.
 *
 * <p>Connections a client closed are closed. ApacheDS's KerberosProtocolHandler ignores
 * MINA's "input closed" event (its inputClosed is empty), so after every Kerberos
 * exchange over TCP the KDC keeps the connection in CLOSE_WAIT, and MINA's I/O threads
 * read its end of stream again and again: each client that ever connected left the KDC
 * spinning, up to three threads at 100 % of a core for the rest of the KDC's life. A filter
 * at the head of every acceptor's chain closes such a connection.
 *
 * <p>A configurable minimum ticket lifetime. MiniKdc passes only max.ticket.lifetime and
 * max.renewable.lifetime to ApacheDS, whose KerberosConfig keeps its default minimum of
 * 4 minutes (DEFAULT_TGS_MINIMUM_TICKET_LIFETIME) for initial tickets, and its
 * ticket-granting service refuses a service ticket shorter than the allowable clock skew
 * (5 minutes): both fail with KDC_ERR_NEVER_VALID. With the property min.ticket.lifetime
 * (ms) the running KDC's minimum and clock skew are set from it (the KDC reads its config
 * on every request).
 *
 * <p>Takes MiniKdc main's arguments (WORKDIR PROPERTIES KEYTAB PRINCIPALS...), starts it,
 * applies both, then prints "KDC ready; minimum ticket lifetime: N ms".
 */
public final class MiniKdcLauncher {
    private MiniKdcLauncher() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.out.println("Arguments: <WORKDIR> <MINIKDCPROPERTIES> <KEYTABFILE> [<PRINCIPALS>]+");
            System.exit(1);
        }
        Properties config = MiniKdc.createConfig();
        try (InputStream in = new FileInputStream(args[1])) {
            config.load(in);
        }
        List<String> principals = Arrays.asList(Arrays.copyOfRange(args, 3, args.length));
        MiniKdc kdc = MiniKdc.start(new File(args[0]), config, new File(args[2]).getAbsoluteFile(), principals);
        Field field = MiniKdc.class.getDeclaredField("kdc");
        field.setAccessible(true);
        KdcServer server = (KdcServer) field.get(kdc);
        for (Transport transport : server.getTransports()) {
            transport.getAcceptor().getFilterChain().addFirst("closeWhenTheClientCloses", new IoFilterAdapter() {
                @Override
                public void inputClosed(NextFilter next, IoSession session) {
                    session.closeNow();
                }
            });
        }
        String minimum = config.getProperty("min.ticket.lifetime");
        if (minimum != null) {
            server.getConfig().setMinimumTicketLifetime(Long.parseLong(minimum));
            server.getConfig().setAllowableClockSkew(Long.parseLong(minimum));
        }
        System.out.println("KDC ready; minimum ticket lifetime: " + server.getConfig().getMinimumTicketLifetime() + " ms");
        System.out.flush();
    }
}
