/**
 * The streamed-sample routes under {@code /api/v1/jobs/<job>/streams}: producers' pushes,
 * trainers' batch reads, closes and ends, re-partitioning, and the coordinator's calls to the other
 * daemons ({@link io.tenplex.server.streams.HttpStreamPeers}); pushes and reads for a rank held by
 * another daemon are relayed to it. The buffers themselves are {@link io.tenplex.datasets.streams}.
 */
package io.tenplex.server.streams;
