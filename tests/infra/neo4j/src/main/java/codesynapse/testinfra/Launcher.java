package codesynapse.testinfra;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.internal.helpers.HostnamePort;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * Test-only embedded Neo4j Community with the Bolt connector on a loopback address.
 *
 * <p>Usage: {@code Launcher <homeDir> [port] [pagecache]}. Port 0 (the default) lets the OS
 * pick a free port, so parallel test runs never race for one. Once Bolt accepts
 * connections, one line {@code READY bolt://127.0.0.1:<port>} goes to stdout; everything
 * else goes to stderr or the logs under homeDir. The process shuts the database down
 * cleanly on SIGTERM/SIGINT and when its stdin reaches end of file, so a parent that dies
 * without cleaning up (its end of the pipe closes) never leaves a Neo4j behind.
 */
public final class Launcher {
    private static final String HOST = "127.0.0.1";
    private static final long START_TIMEOUT_MS = 120_000;

    private Launcher() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 3) {
            System.err.println("usage: Launcher <homeDir> [port=0] [pagecache=64m]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        int port = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        long pageCache = parseBytes(args.length > 2 ? args[2] : "64m");
        Files.createDirectories(home);

        long started = System.nanoTime();
        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(HOST, port))
                .setConfig(BoltConnector.advertised_address, new SocketAddress(HOST, port))
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                .setConfig(BoltConnector.server_bolt_telemetry_enabled, false)
                // Bolt waits 5 s twice on shutdown by default; a test server has nothing to drain.
                .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofMillis(500))
                .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofMillis(500))
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                .setConfig(GraphDatabaseSettings.udc_enabled, false)
                .setConfig(GraphDatabaseSettings.pagecache_memory, pageCache)
                .setConfig(GraphDatabaseSettings.keep_logical_logs, "false")
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .build();

        AtomicBoolean stopped = new AtomicBoolean(false);
        Runnable stop = () -> {
            if (stopped.compareAndSet(false, true)) {
                System.err.println("neo4j-launcher: shutting down");
                dbms.shutdown();
                System.err.println("neo4j-launcher: stopped");
            }
        };
        Runtime.getRuntime().addShutdownHook(new Thread(stop, "neo4j-launcher-shutdown"));

        GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        if (!db.isAvailable(START_TIMEOUT_MS)) {
            System.err.println("neo4j-launcher: database not available after " + START_TIMEOUT_MS + " ms");
            System.exit(1);
        }
        HostnamePort bolt = ((GraphDatabaseAPI) db).getDependencyResolver()
                .resolveDependency(ConnectorPortRegister.class)
                .getLocalAddress(ConnectorType.BOLT);
        if (bolt == null) {
            System.err.println("neo4j-launcher: Bolt connector did not register a port");
            System.exit(1);
        }
        waitForSocket(bolt.getPort());

        long ms = (System.nanoTime() - started) / 1_000_000;
        System.err.println("neo4j-launcher: Bolt ready on " + HOST + ":" + bolt.getPort() + " after " + ms + " ms");
        System.out.println("READY bolt://" + HOST + ":" + bolt.getPort());
        System.out.flush();

        // Block until the parent closes our stdin (or it is not a pipe and reads EOF at once
        // only when the parent gave us /dev/null, which servers.py never does).
        InputStream in = System.in;
        byte[] buffer = new byte[256];
        try {
            while (in.read(buffer) >= 0) {
                // Input is ignored; only end of file matters.
            }
        } catch (IOException e) {
            System.err.println("neo4j-launcher: stdin failed: " + e);
        }
        System.exit(0); // runs the shutdown hook
    }

    private static void waitForSocket(int port) throws InterruptedException {
        long deadline = System.currentTimeMillis() + START_TIMEOUT_MS;
        while (true) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(HOST, port), 1_000);
                return;
            } catch (IOException e) {
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("neo4j-launcher: Bolt port " + port + " never accepted: " + e);
                    System.exit(1);
                }
                Thread.sleep(50);
            }
        }
    }

    private static long parseBytes(String text) {
        String t = text.trim().toLowerCase();
        long unit = 1;
        if (t.endsWith("k")) {
            unit = 1L << 10;
        } else if (t.endsWith("m")) {
            unit = 1L << 20;
        } else if (t.endsWith("g")) {
            unit = 1L << 30;
        }
        if (unit != 1) {
            t = t.substring(0, t.length() - 1);
        }
        return Long.parseLong(t) * unit;
    }
}
