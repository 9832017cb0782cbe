package io.tenplex.client.nd4j;

import io.tenplex.client.TenplexClient;
import io.tenplex.client.Tensor;
import java.util.Map;
import org.nd4j.linalg.api.ndarray.INDArray;

/** Casts a saved state's floating-point tensors to another dtype with ND4J (what {@code tenplex export} writes). */
public final class Export {
    private Export() {
    }

    /** The tensor cast to {@code dtype} when it is floating point; other tensors unchanged. */
    public static Tensor cast(Tensor t, String dtype) {
        if (!Tensor.isFloat(t.dtype()) || t.dtype().equals(dtype)) {
            return t;
        }
        try (INDArray a = Nd4jTensors.toINDArray(t); INDArray c = a.castTo(Nd4jTensors.dataType(dtype))) {
            return Nd4jTensors.fromINDArray(c);
        }
    }

    /**
     * Copies every entry below {@code from} to {@code to} on the same daemon, floating-point tensors
     * cast to {@code dtype} ({@code bf16}, {@code f16} or {@code f32}); files are copied as they are.
     *
     * @return the number of tensors cast
     */
    public static int export(TenplexClient c, String from, String to, String dtype) {
        if (!dtype.equals("bf16") && !dtype.equals("f16") && !dtype.equals("f32")) {
            throw new IllegalArgumentException("export --dtype must be bf16, f16 or f32, not '" + dtype + "'");
        }
        String base = from.endsWith("/") ? from : from + "/";
        int cast = 0;
        for (TenplexClient.Entry e : c.list(from)) {
            String target = to + "/" + e.path().substring(base.length());
            if (e.type().equals("tensor")) {
                Tensor t = c.getTensor(e.path(), null);
                Tensor out = cast(t, dtype);
                cast += out == t ? 0 : 1;
                c.putTensor(target, out, true);
            } else {
                c.putFile(target, c.getFile(e.path()), true);
            }
        }
        return cast;
    }

    /** Entry counts for a report: tensors by dtype. */
    public static Map<String, Long> dtypes(Map<String, Tensor> tensors) {
        return tensors.values().stream().collect(java.util.stream.Collectors.groupingBy(Tensor::dtype,
                java.util.TreeMap::new, java.util.stream.Collectors.counting()));
    }
}
