/**
 * Shared-memory saves and loads: sealed segments a rank writes and the daemon publishes as tensors,
 * committed as a generation through a {@link io.tenplex.jobs.shared.Sealer}, and pinned loads.
 */
package io.tenplex.jobs.shared;
