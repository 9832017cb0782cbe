package io.tenplex.ptc.describe;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A rule's name pattern: {@code *} is any run of characters (dots too), {@code {e}} a number that is
 * the expert index, {@code {n}} any number; everything else literal. It matches whole names.
 */
final class Glob {
    private static final Pattern TOKENS = Pattern.compile("\\*|\\{e\\}|\\{n\\}");
    private final String text;
    private final Pattern regex;
    /** How many wildcards the pattern has: with up to 2, matching is at most quadratic in the name's length. */
    private final int wildcards;

    Glob(String text) {
        this.text = text;
        StringBuilder re = new StringBuilder();
        Matcher m = TOKENS.matcher(text);
        int at = 0;
        int found = 0;
        boolean expert = false;
        while (m.find()) {
            found++;
            re.append(Pattern.quote(text.substring(at, m.start())));
            switch (m.group()) {
                case "*" -> re.append(".*");
                case "{n}" -> re.append("\\d+");
                default -> {
                    if (expert) {
                        throw new IllegalArgumentException("pattern '" + text + "' has {e} twice");
                    }
                    expert = true;
                    re.append("(?<e>\\d+)");
                }
            }
            at = m.end();
        }
        re.append(Pattern.quote(text.substring(at)));
        this.regex = Pattern.compile(re.toString());
        this.wildcards = found;
    }

    boolean hasExpert() {
        return text.contains("{e}");
    }

    /** -1 when {@code name} does not match, the expert index for {@code {e}}, else 0. */
    int match(String name) {
        Matcher m = regex.matcher(wildcards > 2 ? new Bounded(name, MATCH_STEPS) : name);
        if (!m.matches()) {
            return -1;
        }
        return hasExpert() ? Integer.parseInt(m.group("e")) : 0;
    }

    /** At most this many characters are looked at per match: a pattern of many wildcards cannot stall the daemon. */
    static final int MATCH_STEPS = 1 << 20;

    /** A name whose characters may be read only so many times; then the match is refused as too costly. */
    private final class Bounded implements CharSequence {
        private final String s;
        private final int[] left;

        Bounded(String s, int steps) {
            this(s, new int[] {steps});
        }

        private Bounded(String s, int[] left) {
            this.s = s;
            this.left = left;
        }

        @Override
        public char charAt(int i) {
            if (--left[0] < 0) {
                throw new IllegalArgumentException("pattern '" + text + "' is too costly to match against '" + s
                        + "' (too many wildcards); simplify it");
            }
            return s.charAt(i);
        }

        @Override
        public int length() {
            return s.length();
        }

        @Override
        public CharSequence subSequence(int start, int end) {
            return new Bounded(s.substring(start, end), left);
        }

        @Override
        public String toString() {
            return s;
        }
    }

    @Override
    public String toString() {
        return text;
    }
}
