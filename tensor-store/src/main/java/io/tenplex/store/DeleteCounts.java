package io.tenplex.store;

/**
 * What a recursive delete removed, counted as the prototype counts: every file once, every tensor
 * twice (its data and its {@code .meta} sidecar), every directory including the deleted one.
 */
public record DeleteCounts(long files, long dirs, long bytes) {
    /** The prototype's answer body: {@code "<files> <dirs>\n"}. */
    public String toWire() {
        return files + " " + dirs + "\n";
    }
}
