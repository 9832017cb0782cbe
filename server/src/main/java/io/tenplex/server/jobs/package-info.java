/**
 * The job lifecycle on the wire: the HTTP {@link io.tenplex.jobs.DaemonClient}, the Netty range
 * reads behind {@link io.tenplex.jobs.RangeReads}, and the protobuf codec of plan parts.
 */
package io.tenplex.server.jobs;
