package io.tenplex.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.IndexRange;
import io.tenplex.ptc.RangeSyntax;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.memory.Allocator;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class RegionReadTest {

    record Case(DType dtype, Shape shape, Region region, int chunk, int out) {}

    @Provide
    Arbitrary<Case> cases() {
        Arbitrary<Shape> shapes = Arbitraries.longs().between(0, 7).array(long[].class).ofMinSize(0).ofMaxSize(4)
                .map(Shape::of);
        return shapes.flatMap(s -> {
            List<Arbitrary<IndexRange>> per = new ArrayList<>();
            for (int i = 0; i < s.rank(); i++) {
                long size = s.dim(i);
                per.add(Arbitraries.longs().between(0, size).flatMap(a ->
                        Arbitraries.longs().between(a, size).map(b -> IndexRange.of(a, b))));
            }
            Arbitrary<Region> regions = per.isEmpty() ? Arbitraries.just(Region.whole(s))
                    : Combinators.combine(per).as(Region::of);
            return Combinators.combine(Arbitraries.of(DType.class), regions,
                    Arbitraries.integers().between(1, 64), Arbitraries.integers().between(1, 50))
                    .as((t, r, chunk, out) -> new Case(t, s, r, chunk, out));
        });
    }

    /** The oracle: element by element, with row-major index arithmetic. */
    static byte[] naive(byte[] all, Shape shape, Region region, int item) {
        ByteBuffer out = ByteBuffer.allocate((int) region.volume() * item);
        if (region.volume() == 0) {
            return out.array();
        }
        long[] strides = shape.strides();
        long[] idx = region.offset();
        do {
            long flat = 0;
            for (int d = 0; d < idx.length; d++) {
                flat += idx[d] * strides[d];
            }
            out.put(all, (int) flat * item, item);
        } while (next(idx, region));
        return out.array();
    }

    private static boolean next(long[] idx, Region r) {
        for (int d = idx.length - 1; d >= 0; d--) {
            if (++idx[d] < r.range(d).stop()) {
                return true;
            }
            idx[d] = r.range(d).start();
        }
        return false;
    }

    @Property(tries = 500)
    void regionRead_equalsElementwiseOracle_withViewsAndCopies(@ForAll("cases") Case c) {
        TensorMeta meta = new TensorMeta(c.dtype(), c.shape());
        byte[] all = new byte[(int) meta.byteSize()];
        new Random(all.length).nextBytes(all);
        try (TensorStore store = new TensorStore(new Allocator(1 << 20, c.chunk()), 16)) {
            Fixtures.putTensor(store, "/t", meta, all, false);
            byte[] want = naive(all, c.shape(), c.region(), c.dtype().itemSize());
            try (DataRef ref = store.open(StorePath.parse("/t"))) {
                RegionRead copy = new RegionRead(ref, meta, c.region());
                assertEquals(want.length, copy.byteSize());
                ByteBuffer got = ByteBuffer.allocate(want.length);
                ByteBuffer window = ByteBuffer.allocate(c.out());
                while (copy.remaining() > 0) {
                    window.clear();
                    copy.copy(window);
                    got.put(window.flip());
                }
                assertArrayEquals(want, got.array());

                RegionRead views = new RegionRead(ref, meta, c.region());
                ByteBuffer got2 = ByteBuffer.allocate(want.length);
                while (views.remaining() > 0) {
                    got2.put(views.nextView(c.out()));
                }
                assertArrayEquals(want, got2.array());
                if (copy.isContiguous() && want.length > 0) {
                    assertEquals(want.length, copy.runBytes());
                }
            }
        }
    }

    @Test
    void documentedExamples() {
        try (TensorStore store = new TensorStore(new Allocator(1 << 20), 16)) {
            Fixtures.putF32(store, "/t", 3, 4);
            TensorMeta m = TensorMeta.of(DType.F32, 3, 4);
            try (DataRef ref = store.open(StorePath.parse("/t"))) {
                assertArrayEquals(Fixtures.iota32(0), read(ref, m, "0:0"));
                RegionRead r = new RegionRead(ref, m, RangeSyntax.parse("1:3,1:3", m.shape()));
                assertEquals(8, r.runBytes());
                assertArrayEquals(floats(5, 6, 9, 10), read(ref, m, "1:3,1:3"));
                assertArrayEquals(floats(2, 3, 6, 7, 10, 11), read(ref, m, ":,2:"));
                RegionRead rows = new RegionRead(ref, m, RangeSyntax.parse("1:3", m.shape()));
                assertTrue(rows.isContiguous());
                assertEquals(16, rows.firstOffset());
            }
        }
    }

    private static byte[] read(DataRef ref, TensorMeta m, String range) {
        RegionRead r = new RegionRead(ref, m, RangeSyntax.parse(range, m.shape()));
        ByteBuffer out = ByteBuffer.allocate((int) r.byteSize());
        r.copy(out);
        return out.array();
    }

    private static byte[] floats(int... v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int x : v) {
            b.putFloat(x);
        }
        return b.array();
    }
}
