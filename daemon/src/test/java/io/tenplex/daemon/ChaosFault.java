package io.tenplex.daemon;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/**
 * The kinds of fault {@link ChaosIT} injects, each turned on by its name in {@code -Dchaos.faults}
 * (comma-separated; {@code all} for every kind; default {@link #DEFAULTS}, the kinds the daemon
 * survives with every invariant holding).
 */
enum ChaosFault {
    /** SIGKILL a random daemon at a random moment, then start it again on its port and directories. */
    KILL,
    /** SIGKILL a daemon just after the last seal of a save, while its flush to the durable directory runs. */
    KILL_MID_FLUSH,
    /** SIGKILL a daemon while a reconfiguration's parts are staging ({@code executing}). */
    KILL_MID_RECONFIGURATION,
    /** SIGKILL a daemon while a reconfiguration commits ({@code committing}). */
    KILL_MID_COMMIT,
    /** Flip a byte of a durable generation's pack, then restart its daemon so that it reads it. */
    DURABLE_FLIP,
    /** Cut a durable generation's pack or manifest short, then restart its daemon. */
    DURABLE_TRUNCATE,
    /**
     * Flip a byte of a shared-memory segment of worker 0 (the bytes of committed tensors): a process of
     * the daemon's user may write into a segment it was handed; the bytes must then never be served as
     * good (their x-tensor-crc32c does not match them) nor moved or flushed as good.
     */
    SHM_FLIP,
    /** Cut a committed shared-memory segment of worker 0 short: the kernel must refuse it (the segment is sealed). */
    SHM_TRUNCATE,
    /**
     * Hold shared-memory reservations on worker 0 until it refuses one, just before a shared save: the
     * refusal must be 507 {@code insufficient_storage}; the save then goes over REST.
     */
    SHM_EXHAUST;

    /** Kinds on by default: all of them. See docs/DURABLE.md, "The chaos test". */
    static final Set<ChaosFault> DEFAULTS = EnumSet.allOf(ChaosFault.class);

    /** The property's name for this kind: lower case with dashes, e.g. {@code kill-mid-flush}. */
    String wireName() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** The kinds named in {@code spec} ({@code null} or empty: {@link #DEFAULTS}; {@code all}; {@code none}). */
    static Set<ChaosFault> parse(String spec) {
        if (spec == null || spec.isBlank()) {
            return EnumSet.copyOf(DEFAULTS);
        }
        Set<ChaosFault> out = EnumSet.noneOf(ChaosFault.class);
        for (String s : spec.split(",")) {
            String name = s.trim().toLowerCase(Locale.ROOT);
            if (name.equals("all")) {
                out.addAll(EnumSet.allOf(ChaosFault.class));
            } else if (name.equals("default")) {
                out.addAll(DEFAULTS);
            } else if (!name.isEmpty() && !name.equals("none")) {
                out.add(byName(name));
            }
        }
        return out;
    }

    private static ChaosFault byName(String name) {
        for (ChaosFault f : values()) {
            if (f.wireName().equals(name)) {
                return f;
            }
        }
        throw new IllegalArgumentException("unknown fault kind '" + name + "' in -Dchaos.faults (known: "
                + java.util.Arrays.stream(values()).map(ChaosFault::wireName).toList() + ", all, default, none)");
    }
}
