package io.tenplex.datasets.streams;

import java.util.List;

/**
 * A job's stream as one daemon sees it: the policy and limits, the daemon of each rank, the
 * producers' closes counted here (on rank 0's daemon) and expected, whether production has ended,
 * and the buffers of the ranks this daemon holds.
 */
public record StreamStatus(String job, String policy, int capacity, int threshold, int maxSampleBytes, int dp,
        List<String> ranks, int producers, int closes, boolean ended, List<RankStatus> local) {

    static StreamStatus of(String job, StreamConfig c, List<RankStatus> local) {
        StreamSpec s = c.spec();
        return new StreamStatus(job, s.policy().wireName(), s.capacity(), s.threshold(), s.maxSampleBytes(), c.dp(),
                c.ranks(), s.producers(), c.closes(), c.ended(), local);
    }
}
