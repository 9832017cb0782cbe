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

    Glob(String text) {
        this.text = text;
        StringBuilder re = new StringBuilder();
        Matcher m = TOKENS.matcher(text);
        int at = 0;
        boolean expert = false;
        while (m.find()) {
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
    }

    boolean hasExpert() {
        return text.contains("{e}");
    }

    /** -1 when {@code name} does not match, the expert index for {@code {e}}, else 0. */
    int match(String name) {
        Matcher m = regex.matcher(name);
        if (!m.matches()) {
            return -1;
        }
        return hasExpert() ? Integer.parseInt(m.group("e")) : 0;
    }

    @Override
    public String toString() {
        return text;
    }
}
