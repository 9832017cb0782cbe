/**
 * The job lifecycle on the wire: the HTTP {@link io.tenplex.jobs.common.DaemonClient}, the Netty range
 * reads behind {@link io.tenplex.jobs.common.RangeReads}, the protobuf codec of plan parts, and the job
 * routes (scheduler, saves, shared memory, the ranks' downtime reports).
 */
package io.tenplex.server.jobs;
