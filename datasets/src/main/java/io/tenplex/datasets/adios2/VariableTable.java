package io.tenplex.datasets.adios2;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The variables of a file, built step by step from its metadata (BP4 and BP5 alike): each global
 * array's blocks per step, checked to keep its type and shape from step to step; a variable this
 * reader does not serve is kept with the reason, so that naming it is refused with that reason. Not
 * thread-safe; {@link #variables()} gives the immutable result.
 */
final class VariableTable {
    /** The most blocks of all the variables of a file. */
    static final long MAX_BLOCKS = 1L << 22;

    private static final class Building {
        final Adios2Type type;
        long[] shape;
        int lastStep = -1;
        final List<List<Adios2Variable.Block>> steps = new ArrayList<>();
        String refusal;

        Building(Adios2Type type) {
            this.type = type;
        }
    }

    private final Map<String, Building> vars = new LinkedHashMap<>();
    private long blocks;

    /** Records that {@code name} is not served, and why (the first reason given stays). */
    void refuse(String name, Adios2Type type, String why) {
        Building b = vars.computeIfAbsent(name, n -> new Building(type));
        if (b.refusal == null) {
            b.refusal = why;
        }
    }

    /**
     * Adds a block of the global array {@code name} in step {@code step} (steps come in order).
     *
     * @throws IllegalArgumentException (through {@code bad}) for too many blocks in all
     */
    void add(String name, Adios2Type type, int step, long[] shape, Adios2Variable.Block block, MetaBytes where) {
        if (++blocks > MAX_BLOCKS) {
            throw where.bad("has more than " + MAX_BLOCKS + " blocks");
        }
        Building b = vars.computeIfAbsent(name, n -> new Building(type));
        if (b.refusal != null) {
            return;
        }
        if (b.type != type) {
            b.refusal = "its type changes from " + b.type.adiosName + " to " + type.adiosName + " in step " + step;
        } else if (b.shape != null && !Arrays.equals(b.shape, shape)) {
            b.refusal = "its shape changes between steps, from " + Arrays.toString(b.shape) + " to "
                    + Arrays.toString(shape) + " in step " + step;
        }
        if (b.refusal != null) {
            b.steps.clear();
            return;
        }
        b.shape = shape;
        if (b.lastStep != step) {
            b.steps.add(new ArrayList<>());
            b.lastStep = step;
        }
        b.steps.get(b.steps.size() - 1).add(block);
    }

    /** The variables, in the order first seen. */
    Map<String, Adios2Variable> variables() {
        Map<String, Adios2Variable> out = new LinkedHashMap<>();
        vars.forEach((name, b) -> out.put(name, b.refusal != null ? Adios2Variable.refused(name, b.type, b.refusal)
                : new Adios2Variable(name, b.type, b.shape, b.steps.stream().map(List::copyOf).toList(), null)));
        return out;
    }
}
