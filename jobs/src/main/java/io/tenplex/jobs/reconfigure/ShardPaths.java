package io.tenplex.jobs.reconfigure;

import io.tenplex.store.StorePath;

/** Where a shard of an old rank is read: its saved tree, or the tree a parity rebuild streams it into. */
@FunctionalInterface
interface ShardPaths {
    StorePath of(int rank, String key);
}
