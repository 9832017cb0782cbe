/**
 * The dataset half of a parallelizable tensor collection: an index of samples (files and byte
 * ranges), the seeded global order of the samples, and the partition of that order into global
 * batches and per-rank shard files after a mount at some progress. Pure: no I/O beyond reading and
 * writing the text index through {@link java.io.Reader}/{@link java.io.Writer}.
 */
package io.tenplex.ptc.data;
