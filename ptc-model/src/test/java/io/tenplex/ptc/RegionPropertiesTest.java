package io.tenplex.ptc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** Properties of the region algebra over random shapes and regions. */
class RegionPropertiesTest {

    record Pair(Shape shape, Region a, Region b) {}

    record Cut(Shape shape, Region region, int dim, int parts) {}

    @Provide
    Arbitrary<Shape> shapes() {
        return Arbitraries.longs().between(0, 12).array(long[].class).ofMinSize(0).ofMaxSize(4).map(Shape::of);
    }

    static Arbitrary<Region> regionsIn(Shape shape) {
        List<Arbitrary<IndexRange>> per = new ArrayList<>();
        for (int i = 0; i < shape.rank(); i++) {
            long size = shape.dim(i);
            per.add(Arbitraries.longs().between(0, size).flatMap(s ->
                    Arbitraries.longs().between(s, size).map(e -> IndexRange.of(s, e))));
        }
        if (per.isEmpty()) {
            return Arbitraries.just(Region.whole(shape));
        }
        return Combinators.combine(per).as(Region::of);
    }

    @Provide
    Arbitrary<Pair> pairs() {
        return shapes().flatMap(s -> Combinators.combine(regionsIn(s), regionsIn(s)).as((a, b) -> new Pair(s, a, b)));
    }

    @Provide
    Arbitrary<Cut> cuts() {
        return shapes().filter(s -> s.rank() > 0).flatMap(s -> regionsIn(s).flatMap(r ->
                Arbitraries.integers().between(0, r.rank() - 1).flatMap(d ->
                        Arbitraries.integers().between(1, (int) Math.max(1, r.range(d).size()))
                                .map(p -> new Cut(s, r, d, p)))));
    }

    @Property
    void intersection_isCommutative_andContainedInBoth(@ForAll("pairs") Pair p) {
        Optional<Region> ab = p.a().intersect(p.b());
        Optional<Region> ba = p.b().intersect(p.a());
        assertEquals(ab, ba);
        ab.ifPresent(x -> {
            assertTrue(p.a().contains(x), () -> p.a() + " should contain " + x);
            assertTrue(p.b().contains(x), () -> p.b() + " should contain " + x);
        });
    }

    @Property
    void intersection_holdsExactlyTheCommonElements(@ForAll("pairs") Pair p) {
        long common = 0;
        for (long[] idx : elements(p.a())) {
            if (containsIndex(p.b(), idx)) {
                common++;
            }
        }
        long vol = p.a().intersect(p.b()).map(Region::volume).orElse(0L);
        if (p.shape().rank() == 0) {
            return; // a scalar region is never empty, its intersection with itself is itself
        }
        assertEquals(common, vol);
    }

    @Property
    void splitPieces_tileTheRegionExactly(@ForAll("cuts") Cut c) {
        List<Region> pieces = c.region().splitEven(c.dim(), c.parts());
        assertEquals(c.parts(), pieces.size());
        long total = 0;
        for (int i = 0; i < pieces.size(); i++) {
            Region piece = pieces.get(i);
            assertTrue(c.region().contains(piece));
            total += piece.volume();
            for (int j = i + 1; j < pieces.size(); j++) {
                Optional<Region> overlap = piece.intersect(pieces.get(j));
                assertTrue(overlap.isEmpty() || overlap.get().isEmpty(), () -> "pieces overlap: " + pieces);
            }
        }
        assertEquals(c.region().volume(), total);
        assertEquals(c.region().range(c.dim()).start(), pieces.get(0).range(c.dim()).start());
        assertEquals(c.region().range(c.dim()).stop(), pieces.get(pieces.size() - 1).range(c.dim()).stop());
    }

    @Property
    void parse_print_roundTrips(@ForAll("pairs") Pair p) {
        assertEquals(p.a(), RangeSyntax.parse(RangeSyntax.print(p.a()), p.shape()));
    }

    @Property
    void shift_thenShiftBack_isIdentity(@ForAll("pairs") Pair p) {
        long[] off = p.b().offset();
        long[] neg = new long[off.length];
        for (int i = 0; i < off.length; i++) {
            neg[i] = -off[i];
        }
        Region moved = p.a().shift(off);
        assertEquals(p.a(), moved.shift(neg));
        assertEquals(p.a().shape(), moved.shape());
    }

    private static boolean containsIndex(Region r, long[] idx) {
        for (int i = 0; i < idx.length; i++) {
            if (!r.range(i).contains(idx[i])) {
                return false;
            }
        }
        return true;
    }

    private static List<long[]> elements(Region r) {
        List<long[]> out = new ArrayList<>();
        if (r.isEmpty()) {
            return out;
        }
        long[] idx = r.offset();
        while (true) {
            out.add(idx.clone());
            int d = r.rank() - 1;
            while (d >= 0) {
                idx[d]++;
                if (idx[d] < r.range(d).stop()) {
                    break;
                }
                idx[d] = r.range(d).start();
                d--;
            }
            if (d < 0) {
                return out;
            }
        }
    }
}
