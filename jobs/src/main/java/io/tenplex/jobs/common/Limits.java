package io.tenplex.jobs.common;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The sizes a request to the job routes may ask for, checked before anything is allocated or
 * planned; a value over its limit is a 400 whose message names the value and the limit.
 */
public final class Limits {
    /** Ranks of one configuration, and devices of one resource change. */
    public static final int MAX_RANKS = 16_384;
    /** Worker numbers (and local device numbers) are below this. */
    public static final int MAX_WORKER = 1 << 20;
    /**
     * Shards one plan may have at most (about 500 bytes of heap each while planning): ranks divided by
     * pipeline stages, times the model's tensors.
     */
    static final long MAX_PLAN_SHARDS = 1L << 19;

    /** The longest a prepared part may wait before it resolves itself (one day). */
    public static final int MAX_PREPARED_TIMEOUT_MILLIS = 24 * 3600 * 1000;

    private Limits() {
    }

    /** An integer field in [min, max]; {@code dflt} when absent. */
    public static int intIn(JsonNode parent, String field, int dflt, int min, int max, String where) {
        JsonNode v = parent.path(field);
        if (v.isMissingNode() || v.isNull()) {
            if (dflt < min || dflt > max) { // no usable default: the field is required (null is not a value)
                throw new IllegalArgumentException(where + "\"" + field + "\" is required: an integer in [" + min
                        + ", " + max + "]");
            }
            return dflt;
        }
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < min || v.asLong() > max) {
            throw new IllegalArgumentException(where + "\"" + field + "\" must be an integer in [" + min + ", " + max
                    + "], got " + abbreviate(v));
        }
        return v.intValue();
    }

    /** A world size tp x pp x dp x ep, checked without overflow. */
    public static int worldSize(int tp, int pp, int dp, int ep, String where) {
        long world = (long) tp * pp * dp * ep;
        if (world > MAX_RANKS) {
            throw new IllegalArgumentException(where + "world size tp x pp x dp x ep = " + tp + " x " + pp + " x " + dp
                    + " x " + ep + " = " + world + " is over the limit of " + MAX_RANKS + " ranks");
        }
        return (int) world;
    }

    /**
     * The shards one daemon's own part of a change may have: its new ranks x the tensors of the model,
     * within the limit a whole plan has.
     */
    public static void partSize(int ranks, int tensors, String where) {
        planSize(ranks, 1, tensors, where);
    }

    /** The shards of a configuration: (ranks / stages) x tensors (each stage holds its part of the tensors). */
    static void planSize(int ranks, int stages, int tensors, String where) {
        long shards = (long) (ranks / stages) * tensors;
        if (shards > MAX_PLAN_SHARDS) {
            throw new IllegalArgumentException(where + ranks + " ranks / " + stages + " stages x " + tensors + " tensors = "
                    + shards + " shards, over the limit of " + MAX_PLAN_SHARDS + " shards a plan may have");
        }
    }

    /** A JSON value for an error message, at most 40 characters of it. */
    public static String abbreviate(JsonNode v) {
        String s = v.toString();
        return s.length() <= 40 ? s : s.substring(0, 40) + "...";
    }
}
