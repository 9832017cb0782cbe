package io.tenplex.ptc;

/**
 * How a tensor is cut over the tensor-parallel ranks (φ and σ of the paper for one tensor).
 */
public sealed interface Partition {

    /** The dimension cut over tensor-parallel ranks, or -1 when every rank holds it whole. */
    static int splitDim(Partition p) {
        if (p instanceof Split s) {
            return s.dim();
        }
        if (p instanceof VocabSplit v) {
            return v.dim();
        }
        if (p instanceof Expert e) {
            return splitDim(e.inner());
        }
        return -1;
    }

    /**
     * Split along {@code dim} into T equal consecutive parts that keep whole granules of
     * {@code granule} indices together (1 for a plain split; the rows of one attention head or query
     * group for {@code query_key_value}).
     */
    record Split(int dim, long granule) implements Partition {
        public Split {
            if (dim < 0 || granule < 1) {
                throw new IllegalArgumentException("split dim " + dim + " granule " + granule);
            }
        }
    }

    /**
     * A vocabulary split along {@code dim}: the logical size (the vocabulary) is padded to a multiple
     * of {@code divisibleBy}·T, then split into T parts. Padding rows are zero.
     */
    record VocabSplit(int dim, int divisibleBy) implements Partition {
        public VocabSplit {
            if (dim < 0 || divisibleBy < 1) {
                throw new IllegalArgumentException("vocab split dim " + dim + " divisible by " + divisibleBy);
            }
        }

        /** The padded size for tensor parallelism T: the smallest multiple of divisibleBy·T >= size. */
        public long padded(long size, int tp) {
            long m = (long) divisibleBy * tp;
            return (size + m - 1) / m * m;
        }
    }

    /** Every tensor-parallel rank holds the whole tensor. */
    record Replicated() implements Partition {}

    /**
     * Expert {@code expert} of {@code experts}: held only by the ranks of expert-parallel index
     * {@code expert / (experts / E)}, and cut over the tensor-parallel ranks by {@code inner}.
     */
    record Expert(int expert, int experts, Partition inner) implements Partition {
        public Expert {
            if (expert < 0 || expert >= experts || inner instanceof Expert) {
                throw new IllegalArgumentException("expert " + expert + " of " + experts + " (inner " + inner + ")");
            }
        }
    }
}
