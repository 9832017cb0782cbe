package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.JobLayout;
import java.net.http.HttpResponse;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

/**
 * {@code tenplex cancel JOB}: cancels the job's resource changes that still wait for the ranks to save
 * (their stop flag comes down with them), e.g. one left behind by a {@code tenplex run} that was killed.
 * A change that already reconfigures cannot be cancelled: it ends by itself, and this says so.
 */
@Command(name = "cancel", description = "Cancel a job's resource change that still waits for the ranks to save.")
final class CancelCli implements Callable<Integer> {
    @CommandLine.Mixin
    TenplexCli.Target t;

    @Parameters(index = "0", paramLabel = "JOB", description = "The job.")
    String job;

    @Override
    public Integer call() throws Exception {
        JobLayout layout = new JobLayout(job);
        int cancelled = 0;
        int busy = 0;
        for (JsonNode c : t.get(layout.apiResources()).path("changes")) {
            String state = c.path("state").asText();
            String id = c.path("id").asText();
            if (state.equals("stopping")) {
                HttpResponse<String> r = t.delete(layout.apiResourceChange(id));
                if (r.statusCode() == 200) {
                    System.out.println("cancelled resource change " + id + " of job " + job);
                    cancelled++;
                    continue;
                }
                state = "reconfiguring";
            }
            if (state.equals("reconfiguring")) {
                System.out.println("resource change " + id + " of job " + job + " is already reconfiguring: it ends by "
                        + "itself (committed or aborted)");
                busy++;
            }
        }
        if (cancelled == 0 && busy == 0) {
            System.out.println("job " + job + " has no resource change to cancel");
        }
        return busy > 0 ? 1 : 0;
    }
}
