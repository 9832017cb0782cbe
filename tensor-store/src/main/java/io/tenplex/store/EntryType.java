package io.tenplex.store;

/** What a namespace entry is. */
public enum EntryType {
    DIR, FILE, TENSOR,
    /** The read-only {@code <tensor>.meta} text the prototype stored beside every tensor. */
    SIDECAR;

    public String jsonName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
