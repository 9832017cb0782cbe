/**
 * The job lifecycle on the wire: the HTTP {@link io.tenplex.jobs.common.DaemonClient}, the Netty range
 * reads behind {@link io.tenplex.jobs.common.RangeReads}, and the protobuf codec of plan parts.
 */
package io.tenplex.server.jobs;
