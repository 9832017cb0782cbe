package io.tenplex.jobs.reconfigure;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.OptionalLong;

/**
 * What a reconfiguration is asked to do.
 *
 * @param modelSpec the model spec (JSON text; stored with the job), or null for the one stored
 * @param from the old configuration, or null for the one recorded with the source generation
 * @param to the new configuration ({@link ConfigJson})
 * @param generation the generation to read, or empty for the current one (unless {@code fromSave})
 * @param fromSave read the ranks' {@code save} trees rather than a generation
 * @param step the step the new state was saved at, or empty (the generation's, else 0)
 * @param daemons the daemon of every worker, or empty for the daemon's defaults
 * @param central the worker that assembles everything (Tenplex-Central), or -1
 * @param linkRate the link rate in bits/s, or empty for the daemon's
 * @param preparedTimeoutMillis how long prepared parts wait, or empty for the daemon's
 * @param coordinator the address parts in doubt ask ({@code host:port}), or null for this daemon
 */
public record ReconfigureRequest(String job, String modelSpec, JsonNode from, JsonNode to, OptionalLong generation,
        boolean fromSave, OptionalLong step, Map<Integer, InetSocketAddress> daemons, int central, OptionalLong linkRate,
        OptionalLong preparedTimeoutMillis, String coordinator) {

    public ReconfigureRequest {
        daemons = Map.copyOf(daemons);
    }

    /**
     * Whether every daemon plans its own part from the change's definition: always, except
     * Tenplex-Central ({@code central >= 0}), the baseline whose parts the coordinator sends.
     */
    public boolean plannedLocally() {
        return central < 0;
    }

    /** A reconfiguration of a complete generation to {@code to}, everything else by default. */
    public static ReconfigureRequest ofGeneration(String job, long generation, JsonNode to,
            Map<Integer, InetSocketAddress> daemons) {
        return new ReconfigureRequest(job, null, null, to, OptionalLong.of(generation), false, OptionalLong.empty(),
                daemons, -1, OptionalLong.empty(), OptionalLong.empty(), null);
    }
}
