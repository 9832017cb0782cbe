package io.tenplex.ptc;

/**
 * A job's parallel configuration: tensor parallelism T, pipeline parallelism P, data parallelism D
 * (world size T·P·D), expert parallelism E (experts are partitioned over E of the D data-parallel
 * ranks, so E divides D) and whether sequence parallelism is on (it changes only how data tensors
 * are cut, not model state).
 */
public record ParallelConfig(int tp, int pp, int dp, int ep, boolean sequenceParallel) {

    public ParallelConfig {
        if (tp < 1 || pp < 1 || dp < 1 || ep < 1) {
            throw new IllegalArgumentException("parallel degrees must be >= 1, got (T,P,D,E) = (" + tp + "," + pp + ","
                    + dp + "," + ep + ")");
        }
        if (dp % ep != 0) {
            throw new IllegalArgumentException("expert parallelism E=" + ep + " must divide data parallelism D=" + dp);
        }
    }

    /** (T, P, D) with no expert or sequence parallelism. */
    public static ParallelConfig of(int tp, int pp, int dp) {
        return new ParallelConfig(tp, pp, dp, 1, false);
    }

    public int worldSize() {
        return tp * pp * dp;
    }

    @Override
    public String toString() {
        return "(T,P,D" + (ep > 1 ? ",E" : "") + ")=(" + tp + "," + pp + "," + dp + (ep > 1 ? "," + ep : "") + ")"
                + (sequenceParallel ? "+SP" : "");
    }
}
