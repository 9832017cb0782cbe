/**
 * Benchmarks own the side-by-side measurements behind docs/BENCHMARKS.md: in-process region reads
 * against a plain memory copy (JMH), REST transfers against raw TCP on loopback, and uploads
 * against a raw TCP receive into preallocated memory ({@link io.tenplex.bench.UploadBench}).
 */
package io.tenplex.bench;
