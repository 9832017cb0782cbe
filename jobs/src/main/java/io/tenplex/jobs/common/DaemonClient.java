package io.tenplex.jobs.common;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StorePath;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * Everything the job lifecycle asks other daemons: the parts of a plan (post, prepare, commit, abort,
 * status), the saved trees the planner binds, the saved values a part copies, the coordinator's
 * outcome of a reconfiguration, seals and stop flags. One implementation talks HTTP (the server
 * module: scheme, TLS, token and timeouts in one place); tests use an in-memory one.
 *
 * <p>Every call completes exceptionally when the daemon cannot be reached (an {@link java.io.IOException})
 * or refuses (a {@link DaemonCallException}, whose kind tells not-found and conflicts apart).
 */
public interface DaemonClient {
    static InetSocketAddress address(String hostPort) {
        return DaemonAddress.parse(hostPort);
    }

    /** The actions a coordinator (or a part in doubt) asks of a prepared or executing part. */
    enum PartAction { PREPARE, COMMIT, ABORT }

    /**
     * One entry of a listed tree: its absolute path, whether it is a tensor, its number of dimensions,
     * and a tensor's dtype and shape (null when not a tensor or not known).
     */
    record TreeEntry(String path, boolean tensor, int dims, TensorMeta meta) {
        public TreeEntry(String path, boolean tensor, int dims) {
            this(path, tensor, dims, null);
        }
    }

    /** A saved value read whole: its bytes, its metadata when it is a tensor (else null), and the holder's CRC32C. */
    record SavedValue(byte[] bytes, TensorMeta tensor, String crc32c) {
    }

    /** Completes when the daemon answers that it is healthy. */
    CompletableFuture<Void> health(InetSocketAddress daemon);

    /** Hands a daemon its part of a plan (idempotent per plan); completes with the part's first status. */
    CompletableFuture<PartStatus> postPart(InetSocketAddress daemon, PlanPart part);

    /**
     * A daemon's answer to a change's definition: its part's first status and the digest of the whole
     * change's choices as it planned them, or (status null) the descriptions it lacks.
     */
    record ChangeAnswer(PartStatus status, String planDigest, List<String> missing) {
        public ChangeAnswer {
            missing = List.copyOf(missing);
        }
    }

    /**
     * Hands a daemon a change's definition: it plans its own part ({@code worker}'s) and starts it
     * (idempotent per change), or answers which descriptions it lacks.
     */
    default CompletableFuture<ChangeAnswer> postChange(InetSocketAddress daemon, int worker, ChangeSpec spec) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("this client does not post changes"));
    }

    /**
     * Hands a daemon a change's definition ahead of the change: it plans its own part ({@code worker}'s)
     * and keeps it for the change, starting nothing; answers the plan digest, or the descriptions it lacks.
     */
    default CompletableFuture<ChangeAnswer> postChangeAhead(InetSocketAddress daemon, int worker, ChangeSpec spec) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("this client does not plan ahead"));
    }

    /** Keeps a description (a model's, a saved layout's) on a daemon under its digest. */
    default CompletableFuture<Void> putDescription(InetSocketAddress daemon, String job, String digest, byte[] bytes) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("this client does not send descriptions"));
    }

    /**
     * Has a daemon check its own old ranks' saved trees under {@code /job/<job>/<sourceDir>}: the
     * layout digest of each (null for a rank that saved nothing there).
     */
    default CompletableFuture<Map<Integer, String>> describeTrees(InetSocketAddress daemon, String job, String sourceDir,
            List<Integer> ranks) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("this client does not check trees"));
    }

    /**
     * Has a daemon digest saved values of its own old ranks under {@code /job/<job>/<sourceDir>}
     * ({@code reconfigure.ValueDigests}): rank -> (path -> SHA-256 hex).
     *
     * @param values rank -> paths relative to the rank's tree
     */
    default CompletableFuture<Map<Integer, Map<String, String>>> digestValues(InetSocketAddress daemon, String job,
            String sourceDir, Map<Integer, List<String>> values) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("this client does not digest values"));
    }

    /** A description a daemon keeps (a saved layout it checked), by digest. */
    default CompletableFuture<byte[]> description(InetSocketAddress daemon, String job, String digest) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("this client does not read descriptions"));
    }

    /** Asks a part to prepare (completes once it is executed), commit or abort. */
    CompletableFuture<PartStatus> partAction(InetSocketAddress daemon, String job, String planId, PartAction action);

    /** A part's live status. */
    CompletableFuture<PartStatus> partStatus(InetSocketAddress daemon, String job, String planId);

    /** The coordinator's state of a reconfiguration ({@code executing}, {@code committed}, ...). */
    CompletableFuture<String> reconfigurationState(InetSocketAddress coordinator, String job, String id);

    /** Lists the tree below {@code dir} recursively; an absent tree lists as empty. */
    CompletableFuture<List<TreeEntry>> listTree(InetSocketAddress daemon, StorePath dir);

    /** Reads a saved file (or a tensor inside a value) whole, with the holder's checksum. */
    CompletableFuture<SavedValue> readValue(InetSocketAddress daemon, StorePath path);

    /** Tells a daemon that {@code ranks} of a save step are sealed (with the save's world and config, or null). */
    CompletableFuture<Void> sealed(InetSocketAddress daemon, String job, long step, List<Integer> ranks, int world,
            JsonNode config);

    /** Raises a job's stop flag on a daemon (from {@code atStep}, when given). */
    CompletableFuture<Void> raiseStop(InetSocketAddress daemon, String job, OptionalLong atStep, String reason);

    /** Clears a job's stop flag on a daemon. */
    CompletableFuture<Void> clearStop(InetSocketAddress daemon, String job);

    /** A step of a job's removal on another daemon ({@code JobRemoval}). */
    enum RemovalStep {
        /**
         * Whether it could remove the job (a conflict while a change of the job runs there), and if so
         * hold back the job's saves there and wait for those in flight, until {@link #REMOVE} or
         * {@link #RELEASE}.
         */
        PREPARE,
        /** Let the saves held back by {@link #PREPARE} go on: the removal was refused elsewhere. */
        RELEASE,
        /** Remove what the daemon holds of the job ({@code JobRemoval.removeHere}). */
        REMOVE
    }

    /** One step of a job's removal on {@code daemon}. */
    CompletableFuture<Void> removeJob(InetSocketAddress daemon, String job, RemovalStep step);

    // What a scheduler adapter asks the coordinating daemon ({@code host:port}, or a URL with its scheme).

    /** The configuration a resource change with {@code request} would choose ({@code tp}, {@code pp}, {@code dp}, ...). */
    CompletableFuture<JsonNode> parallelize(String daemon, String job, JsonNode request);

    /** Starts a resource change; answers its {@code id} and {@code status}. */
    CompletableFuture<JsonNode> startResourceChange(String daemon, String job, JsonNode request);

    /** A resource change's description once it has ended, or when {@code wait} has passed. */
    CompletableFuture<JsonNode> awaitResourceChange(String daemon, String job, String id, java.time.Duration wait);

    /** A small file of the daemon's store, or empty when there is none. */
    CompletableFuture<java.util.Optional<byte[]>> readFile(String daemon, StorePath path);

    /** Writes (or replaces) a small file of the daemon's store. */
    CompletableFuture<Void> writeFile(String daemon, StorePath path, byte[] bytes);
}
