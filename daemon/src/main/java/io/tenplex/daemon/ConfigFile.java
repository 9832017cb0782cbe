package io.tenplex.daemon;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/** The {@code --config} JSON file: one object whose keys are the options' camel-case names. */
final class ConfigFile {
    static final Set<String> KEYS = Set.of("bind", "port", "memoryLimit", "mount", "token", "peers", "linkRate",
            "idleTimeout", "headTimeout", "bodyTimeout", "writeTimeout", "allowOrigins", "dataRoots", "allowSourceHosts",
            "sourceConnectTimeout", "sourceReadTimeout", "preparedTimeout",
            "tokenFile", "tlsCert", "tlsKey", "tlsCa", "peerConnections", "coordinatorTimeout",
            "shmDir", "checkpointDir", "streamMemory");

    private final Path file;
    private final JsonNode n;

    private ConfigFile(Path file, JsonNode n) {
        this.file = file;
        this.n = n;
    }

    /** The values {@code file} gives. @throws IllegalArgumentException when it cannot be read or has unknown keys */
    static DaemonConfig.Given read(Path file) {
        JsonNode n;
        try {
            n = new ObjectMapper().readTree(Files.readAllBytes(file));
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read config file " + file + ": " + e.getMessage());
        }
        if (n == null || !n.isObject()) {
            throw new IllegalArgumentException("config file " + file + " must hold a JSON object");
        }
        for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!KEYS.contains(k)) {
                throw new IllegalArgumentException("config file " + file + ": unknown key '" + k + "' (expected one of "
                        + KEYS + ")");
            }
        }
        return new ConfigFile(file, n).given();
    }

    private DaemonConfig.Given given() {
        return new DaemonConfig.Given(text("bind"), n.has("port") ? n.get("port").asInt() : null, text("memoryLimit"),
                path("mount"), text("token"), text("peers"), text("linkRate"), timeouts(), sources(),
                path("tokenFile"), path("tlsCert"), path("tlsKey"), path("tlsCa"),
                new DaemonConfig.Tunables(text("peerConnections"), text("coordinatorTimeout"), text("shmDir"),
                        path("checkpointDir"), text("streamMemory")));
    }

    private DaemonConfig.Timeouts timeouts() {
        return new DaemonConfig.Timeouts(text("idleTimeout"), text("headTimeout"), text("bodyTimeout"),
                text("writeTimeout"), list("allowOrigins"), text("preparedTimeout"));
    }

    private DaemonConfig.Sources sources() {
        return new DaemonConfig.Sources(list("dataRoots").stream().map(Path::of).toList(), list("allowSourceHosts"),
                text("sourceConnectTimeout"), text("sourceReadTimeout"));
    }

    private List<String> list(String k) {
        if (!n.has(k)) {
            return List.of();
        }
        if (!n.get(k).isArray()) {
            throw new IllegalArgumentException("config file " + file + ": '" + k + "' must be an array of strings");
        }
        List<String> out = new ArrayList<>();
        n.get(k).forEach(x -> out.add(x.asText()));
        return out;
    }

    private String text(String k) {
        return n.has(k) ? n.get(k).asText() : null;
    }

    private Path path(String k) {
        return n.has(k) ? Path.of(n.get(k).asText()) : null;
    }
}
