/**
 * Streamed training samples: per data-parallel rank training buffers that producers push samples
 * into while training runs and trainers read batches from, with the FIFO, FIRO and Reservoir
 * policies of Melissa (section 3.2.3, Algorithm 1). {@link io.tenplex.datasets.streams.TrainingBuffer}
 * holds a policy's pure logic, {@link io.tenplex.datasets.streams.RankBuffer} adds waiting producers
 * and readers (explicit back-pressure, never a silent drop), and
 * {@link io.tenplex.datasets.streams.StreamService} spreads a job's samples over its ranks' buffers
 * across daemons ({@link io.tenplex.datasets.streams.StreamPeers}) and re-partitions them when the
 * data parallelism changes. The wire is in the server module.
 */
package io.tenplex.datasets.streams;
