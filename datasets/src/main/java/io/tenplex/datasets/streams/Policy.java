package io.tenplex.datasets.streams;

import java.util.Locale;

/** How a rank's training buffer orders, repeats and evicts samples (Melissa, section 3.2.3). */
public enum Policy {
    /** Arrival order, each sample read once; a batch as soon as the buffer holds one. */
    FIFO,
    /** Random order, each sample read once; batches only above a threshold until production ends. */
    FIRO,
    /** Uniform draws among seen and unseen samples; an incoming sample evicts a random seen one. */
    RESERVOIR;

    /** The wire name: {@code fifo}, {@code firo} or {@code reservoir}. */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** @throws IllegalArgumentException for an unknown name (the message lists the known ones) */
    public static Policy parse(String s) {
        for (Policy p : values()) {
            if (p.wireName().equals(s)) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown stream policy '" + s + "' (expected: fifo, firo or reservoir)");
    }
}
