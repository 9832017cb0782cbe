package io.tenplex.ptc;

import java.util.Arrays;

/** Which transformer layers each pipeline stage holds: uniform, or explicit counts per stage. */
public final class StageMap {
    private final int[] first; // first global layer of each stage, plus the total at the end

    private StageMap(int[] layersPerStage) {
        first = new int[layersPerStage.length + 1];
        for (int s = 0; s < layersPerStage.length; s++) {
            if (layersPerStage[s] < 0) {
                throw new IllegalArgumentException("stage " + s + " has a negative layer count");
            }
            first[s + 1] = first[s] + layersPerStage[s];
        }
    }

    /** L layers over P stages, L/P each. */
    public static StageMap uniform(int layers, int stages) {
        if (layers % stages != 0) {
            throw new IllegalArgumentException(layers + " layers cannot be split uniformly over P=" + stages
                    + " pipeline stages; give explicit layers per stage");
        }
        int[] per = new int[stages];
        Arrays.fill(per, layers / stages);
        return new StageMap(per);
    }

    public static StageMap explicit(int... layersPerStage) {
        if (layersPerStage.length == 0) {
            throw new IllegalArgumentException("no stages");
        }
        return new StageMap(layersPerStage.clone());
    }

    public int stages() {
        return first.length - 1;
    }

    public int layers() {
        return first[first.length - 1];
    }

    public int firstLayer(int stage) {
        return first[stage];
    }

    /** The stage holding a placement. */
    public int stageOf(Placement p) {
        return switch (p.kind()) {
            case FIRST -> 0;
            case LAST -> stages() - 1;
            case LAYER -> {
                if (p.layer() >= layers()) {
                    throw new IllegalArgumentException("layer " + p.layer() + " but the model has " + layers());
                }
                int s = Arrays.binarySearch(first, p.layer());
                yield s >= 0 ? firstNonEmptyFrom(s) : -s - 2;
            }
        };
    }

    private int firstNonEmptyFrom(int s) {
        while (first[s + 1] == first[s]) {
            s++;
        }
        return s;
    }
}
