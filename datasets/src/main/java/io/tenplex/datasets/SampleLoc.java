package io.tenplex.datasets;

/** Where a sample's bytes are in a mount: sample {@code i} of shard buffer {@code buf}. */
record SampleLoc(ShardBuffer buf, int i) {
    int id() {
        return buf.ids[i];
    }

    long length() {
        return buf.length(i);
    }
}
