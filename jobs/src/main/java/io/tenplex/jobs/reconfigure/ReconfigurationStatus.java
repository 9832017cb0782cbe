package io.tenplex.jobs.reconfigure;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.tenplex.jobs.common.PartStatus;
import io.tenplex.transform.PlanReport;
import java.util.Map;

/**
 * What a coordinator reports of a reconfiguration (its status route's JSON): state, phases, each
 * destination worker's progress and the plan's report. Absent values are left out.
 *
 * @param pacedForLinkRate the link rate flows were paced for (bits/s), or null
 * @param error the failure's reason, or null
 * @param sources where each old rank was read from ({@code "memory of worker 1"}, {@code "partner copy on
 *     worker 0 (worker 3 lost)"}), only for a recovery around lost workers; else null
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ReconfigurationStatus(String job, String plan, String from, String to, String state, String mode,
        String source, Long pacedForLinkRate, String error, Map<String, Long> phaseMillis,
        Map<String, Worker> workers, Report report, Map<Integer, String> sources) {

    /** A destination worker's part, as last heard ({@code executeMillis} null until it executed). */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Worker(String state, long bytesDone, long bytesTotal, long localBytes, long remoteBytes, int retries,
            int corrupted, Long executeMillis, String slowMemory) {

        static Worker of(PartStatus p) {
            return new Worker(p.state(), p.bytesDone(), p.bytesTotal(), p.localBytes(), p.remoteBytes(), p.retries(),
                    p.corrupted(), p.executeNanos() > 0 ? p.executeNanos() / 1_000_000 : null, p.slowMemory());
        }
    }

    /** The plan's traffic (bytes). */
    public record Report(long onDeviceBytes, long intraWorkerBytes, long interWorkerBytes, long lowerBoundBytes,
            long keptBytes, Map<Integer, Long> sentByWorker, Map<Integer, Long> receivedByWorker) {

        static Report of(PlanReport r) {
            return new Report(r.onDevice(), r.intraWorker(), r.interWorker(), r.lowerBound(), r.kept(),
                    r.sentByWorker(), r.receivedByWorker());
        }
    }
}
