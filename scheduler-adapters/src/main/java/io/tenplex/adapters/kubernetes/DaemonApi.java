package io.tenplex.adapters.kubernetes;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.DaemonCallException;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.store.StorePath;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/** The coordinating daemon, as the Kubernetes adapter asks it (through the one {@link DaemonClient}). */
final class DaemonApi {
    /** A non-2xx answer, with the daemon's reason. */
    static final class Refused extends IOException {
        final int status;

        Refused(int status, String what, String reason) {
            super(what + " answered " + status + ": " + reason.strip());
            this.status = status;
        }
    }

    private final DaemonClient client;
    private final String address;
    private final String job;
    private final JobLayout layout;

    /** @param address the daemon's {@code host:port} (or {@code http(s)://host:port}) */
    DaemonApi(String address, String job, DaemonClient client) {
        this.client = client;
        this.address = address;
        this.job = job;
        this.layout = new JobLayout(job);
    }

    String address() {
        return address;
    }

    /** The configuration the daemon's parallelizer chooses for {@code request}. */
    JsonNode parallelize(JsonNode request) throws IOException, InterruptedException {
        return answer(client.parallelize(address, job, request), "POST " + layout.api("/parallelize"));
    }

    /** Starts a resource change ({@code id} and {@code status} in the answer). */
    JsonNode startChange(JsonNode request) throws IOException, InterruptedException {
        return answer(client.startResourceChange(address, job, request), "POST " + layout.api("/resources"));
    }

    /** The change once it has ended (or {@code wait} has passed). */
    JsonNode awaitChange(String id, Duration wait) throws IOException, InterruptedException {
        return answer(client.awaitResourceChange(address, job, id, wait), "GET " + layout.apiResourceChange(id));
    }

    /** A file of the store, or empty when there is none. */
    Optional<byte[]> readFile(String storePath) throws IOException, InterruptedException {
        return answer(client.readFile(address, StorePath.parse(storePath)), "GET " + storePath);
    }

    /** Writes (or replaces) a file of the store. */
    void writeFile(String storePath, byte[] body) throws IOException, InterruptedException {
        answer(client.writeFile(address, StorePath.parse(storePath), body), "PUT " + storePath);
    }

    private static <T> T answer(CompletableFuture<T> call, String what) throws IOException, InterruptedException {
        try {
            return call.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof DaemonCallException refused) {
                throw new Refused(refused.status(), what, refused.reason());
            }
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        }
    }
}
