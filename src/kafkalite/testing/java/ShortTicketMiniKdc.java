import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;

import kafka.security.minikdc.MiniKdc;
import org.apache.directory.server.kerberos.kdc.KdcServer;

/**
 * Kafka's MiniKdc with a configurable minimum ticket lifetime.
 *
 * <p>MiniKdc passes only max.ticket.lifetime and max.renewable.lifetime to Apache
 * Directory Server's KDC, whose KerberosConfig keeps its default minimum of 4 minutes
 * (DEFAULT_TGS_MINIMUM_TICKET_LIFETIME) for initial tickets, and its ticket-granting
 * service refuses a service ticket shorter than the allowable clock skew (5 minutes):
 * both fail with KDC_ERR_NEVER_VALID. This launcher takes the same arguments as
 * MiniKdc's main (WORKDIR PROPERTIES KEYTAB PRINCIPALS...), starts it, then sets the
 * running KDC's minimum ticket lifetime and clock skew from the property
 * min.ticket.lifetime (ms; the KDC reads its config on every request) and prints
 * "Minimum ticket lifetime: N ms" once it has.
 */
public final class ShortTicketMiniKdc {
    private ShortTicketMiniKdc() {
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
        long minimum = Long.parseLong(config.getProperty("min.ticket.lifetime", "240000"));
        List<String> principals = Arrays.asList(Arrays.copyOfRange(args, 3, args.length));
        MiniKdc kdc = MiniKdc.start(new File(args[0]), config, new File(args[2]).getAbsoluteFile(), principals);
        Field field = MiniKdc.class.getDeclaredField("kdc");
        field.setAccessible(true);
        KdcServer server = (KdcServer) field.get(kdc);
        server.getConfig().setMinimumTicketLifetime(minimum);
        server.getConfig().setAllowableClockSkew(minimum);
        System.out.println("Minimum ticket lifetime: " + server.getConfig().getMinimumTicketLifetime() + " ms");
        System.out.flush();
    }
}
