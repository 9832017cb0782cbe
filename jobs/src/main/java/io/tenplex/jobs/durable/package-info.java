/**
 * The durable tier (L4): complete generations flushed to a directory on disk in a self-describing
 * format (a JSON manifest per generation with per-block CRC32Cs, blocks in pack files), written so that
 * a crash never leaves a generation that looks complete, differential (unchanged blocks are not
 * written again), with retention; and the restore of those generations when a daemon starts. The file
 * format is described in {@code docs/DURABLE.md}.
 */
package io.tenplex.jobs.durable;
