/**
 * Benchmarks own the side-by-side measurements behind docs/BENCHMARKS.md: in-process region reads
 * against a plain memory copy (JMH), REST transfers against raw TCP on loopback, and uploads
 * against a raw TCP receive into preallocated memory ({@link io.tenplex.bench.UploadBench}), and the
 * planner and the reconfiguration coordinator's whole path at thousands of devices in the daemon's heap
 * ({@link io.tenplex.bench.PlannerBench}, {@link io.tenplex.bench.CoordinatorBench}).
 */
package io.tenplex.bench;
