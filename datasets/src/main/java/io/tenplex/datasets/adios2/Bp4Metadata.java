package io.tenplex.datasets.adios2;

import java.util.Map;

/** The variables of a BP4 directory, from its metadata (not yet read: BP4 files are refused). */
final class Bp4Metadata {
    private Bp4Metadata() {}

    static Map<String, Adios2Variable> read(MetaBytes idx, MetaBytes md, DataFiles data) {
        throw idx.bad("BP4 is not read yet");
    }
}
