/**
 * What every package of the job lifecycle shares: the paths of a job ({@link io.tenplex.jobs.common.JobLayout},
 * {@link io.tenplex.jobs.common.CheckpointLayout}), configuration JSON, the other daemons as an interface
 * ({@link io.tenplex.jobs.common.DaemonClient}, {@link io.tenplex.jobs.common.RangeReads}), plan parts and their
 * status, small control files and limits.
 */
package io.tenplex.jobs.common;
