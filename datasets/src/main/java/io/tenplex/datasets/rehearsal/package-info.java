/**
 * Distributed rehearsal buffers for continual learning (Bouvier et al., section 5): per data-parallel
 * rank, up to S representatives of each of K classes ({@link io.tenplex.datasets.rehearsal.RankBuffer}),
 * updated with the candidates a rank offers after each step (a full class memory replaces a random
 * representative), sampled uniformly and without replacement across every daemon's buffers of the job
 * ({@link io.tenplex.datasets.rehearsal.GlobalSampler}), and re-partitioned with per-class balance
 * when the data parallelism changes ({@link io.tenplex.datasets.rehearsal.Repartition}). Samples are
 * opaque tuples of tensors ({@link io.tenplex.datasets.rehearsal.Tuples}); other daemons are reached
 * only through the {@link io.tenplex.datasets.rehearsal.RehearsalPeers} port, whose HTTP implementation
 * lives in the server module. {@link io.tenplex.datasets.rehearsal.RehearsalService} is the typed API.
 */
package io.tenplex.datasets.rehearsal;
