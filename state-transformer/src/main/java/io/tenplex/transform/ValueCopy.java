package io.tenplex.transform;

import io.tenplex.ptc.Device;

/** A non-tensor value copied whole from a deterministic source rank. */
public record ValueCopy(int destRank, String key, int sourceRank, Device sourceDevice) {}
