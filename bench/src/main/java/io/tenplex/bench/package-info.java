/**
 * Benchmarks own the side-by-side measurements behind docs/BENCHMARKS.md: in-process region reads
 * against a plain memory copy (JMH), and REST transfers against raw TCP on loopback.
 */
package io.tenplex.bench;
