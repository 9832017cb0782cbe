package io.tenplex.ptc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class RangeSyntaxTest {
    private final Shape s34 = Shape.of(3, 4);

    @Test
    void parse_documentedExamples() {
        assertEquals(Region.of(IndexRange.of(1, 3), IndexRange.of(1, 3)), RangeSyntax.parse("1:3,1:3", s34));
        assertEquals(Region.of(IndexRange.of(0, 3), IndexRange.of(2, 4)), RangeSyntax.parse(":,2:", s34));
    }

    @Test
    void parse_fewerSlicesThanDims_takesRestWhole() {
        assertEquals(Region.of(IndexRange.of(1, 2), IndexRange.of(0, 4)), RangeSyntax.parse("1:2", s34));
        assertEquals(Region.whole(s34), RangeSyntax.parse("", s34));
    }

    @Test
    void parse_negativeBounds_countFromTheEnd() {
        assertEquals(Region.of(IndexRange.of(2, 3), IndexRange.of(0, 3)), RangeSyntax.parse("-1:,:-1", s34));
    }

    @Test
    void parse_outOfBounds_messageCarriesValues() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RangeSyntax.parse("0:3,3:9", s34));
        assertEquals("range 3:9 out of bounds for dim 1 of size 4 (expected: 0 <= start <= stop <= 4)", e.getMessage());
    }

    @Test
    void parse_rejectsMalformed() {
        for (String bad : new String[] {"1", "a:b", "1:2:3", "0:1,0:1,0:1", "2:1", "-9:"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RangeSyntax.parse(bad, s34),
                    bad);
            assertTrue(!e.getMessage().isEmpty());
        }
    }

    @Test
    void checkWithin_reportsDimAndSize() {
        Region r = Region.of(IndexRange.of(0, 1), IndexRange.of(3, 9));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> r.checkWithin(Shape.of(2, 8)));
        assertEquals("range 3:9 out of bounds for dim 1 of size 8 (expected: 0 <= start <= stop <= 8)", e.getMessage());
    }

    @Test
    void scalar_regionHasOneElement() {
        assertEquals(1, RangeSyntax.parse("", Shape.scalar()).volume());
        assertEquals("", RangeSyntax.print(Region.whole(Shape.scalar())));
    }
}
