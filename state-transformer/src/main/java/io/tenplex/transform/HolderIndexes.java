package io.tenplex.transform;

import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.TensorSpec;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * The holder index of every old cell a planner asks for, made once per holder set (tensors of one
 * stage cut the same way share it) and found by (old tensor, cell) with array look-ups.
 */
final class HolderIndexes {
    private final Ptc from;
    private final HolderIndex[][] byTensor;
    private final Map<Long, HolderIndex> sets = new HashMap<>();
    private final Function<int[], HolderIndex> make;

    /** @param make the index of a holder set, from its holding ranks (called once per set) */
    HolderIndexes(Ptc from, Function<int[], HolderIndex> make) {
        this.from = from;
        this.byTensor = new HolderIndex[from.model().tensors().size()][];
        this.make = make;
    }

    /** The holders of cell {@code cell} of old tensor {@code f} ({@code source}). */
    HolderIndex of(int f, TensorSpec source, int cell) {
        HolderIndex[] byCell = byTensor[f];
        if (byCell == null) {
            byCell = new HolderIndex[from.cells(source)];
            byTensor[f] = byCell;
        }
        HolderIndex h = byCell[cell];
        if (h == null) {
            h = sets.computeIfAbsent(from.holderSet(source, cell), k -> make.apply(from.holders(source, cell)));
            byCell[cell] = h;
        }
        return h;
    }
}
