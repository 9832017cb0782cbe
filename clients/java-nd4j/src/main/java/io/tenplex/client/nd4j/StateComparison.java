package io.tenplex.client.nd4j;

import io.tenplex.client.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.indexing.BooleanIndexing;
import org.nd4j.linalg.indexing.conditions.Conditions;
import org.nd4j.linalg.ops.transforms.Transforms;

/**
 * Compares two saved states numerically with ND4J (what {@code tenplex verify} prints): per tensor,
 * the largest absolute and relative difference and where it is, and whether every element satisfies
 * {@code |a - b| <= atol + rtol * |b|} (as numpy's {@code allclose}, with NaN equal to NaN).
 */
public final class StateComparison {
    /** One tensor's comparison; {@code problem} is set when shapes, dtypes or presence differ. */
    public record Result(String name, String shape, double maxAbsDiff, double maxRelDiff, long worstIndex,
            long violations, String problem) {
        public boolean ok() {
            return problem == null && violations == 0;
        }
    }

    private StateComparison() {
    }

    public static List<Result> compare(Map<String, Tensor> a, Map<String, Tensor> b, double rtol, double atol) {
        List<Result> out = new ArrayList<>();
        TreeSet<String> names = new TreeSet<>(a.keySet());
        names.addAll(b.keySet());
        for (String n : names) {
            Tensor x = a.get(n);
            Tensor y = b.get(n);
            if (x == null || y == null) {
                out.add(new Result(n, (x == null ? y : x).describe(), Double.NaN, Double.NaN, -1, -1,
                        "only in the " + (x == null ? "second" : "first") + " state"));
                continue;
            }
            if (!java.util.Arrays.equals(x.shape(), y.shape())) {
                out.add(new Result(n, x.describe(), Double.NaN, Double.NaN, -1, -1, "shapes differ: " + x.describe()
                        + " vs " + y.describe()));
                continue;
            }
            out.add(compare(n, x, y, rtol, atol));
        }
        return out;
    }

    static Result compare(String name, Tensor x, Tensor y, double rtol, double atol) {
        if (x.elements() == 0) {
            return new Result(name, x.describe(), 0, 0, -1, 0, null);
        }
        try (INDArray a = Nd4jTensors.toINDArray(x).castTo(DataType.DOUBLE);
             INDArray b = Nd4jTensors.toINDArray(y).castTo(DataType.DOUBLE)) {
            // NaN equals NaN; a NaN on one side only is a violation
            long nanMismatch = Transforms.abs(a.isNaN().castTo(DataType.DOUBLE).sub(b.isNaN().castTo(DataType.DOUBLE)), false)
                    .sumNumber().longValue();
            BooleanIndexing.replaceWhere(a, 0.0, Conditions.isNan());
            BooleanIndexing.replaceWhere(b, 0.0, Conditions.isNan());
            INDArray diff = Transforms.abs(a.sub(b), false);
            BooleanIndexing.replaceWhere(diff, 0.0, Conditions.isNan()); // inf - inf of equal infinities
            INDArray absB = Transforms.abs(b, true);
            INDArray tol = absB.mul(rtol).addi(atol);
            long violations = diff.gt(tol).castTo(DataType.LONG).sumNumber().longValue() + nanMismatch;
            long worst = diff.reshape(diff.length()).argMax().getLong(0);
            double maxAbs = diff.maxNumber().doubleValue();
            double maxRel = diff.div(Transforms.max(absB, Double.MIN_NORMAL, false)).maxNumber().doubleValue();
            return new Result(name, x.describe() + (x.dtype().equals(y.dtype()) ? "" : " vs " + y.dtype()), maxAbs,
                    maxRel, worst, violations, null);
        }
    }
}
