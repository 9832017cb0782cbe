package io.tenplex.daemon;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A strict parser of the Prometheus text exposition format 0.0.4: every sample belongs to a family
 * declared by {@code # TYPE} before it, a family is declared once and its samples are contiguous,
 * names and labels are well formed, values are numbers, and histograms are consistent.
 */
final class PromText {
    private static final Pattern NAME = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");
    private static final Pattern SAMPLE = Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)})? (\\S+)( -?\\d+)?");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\\\n]|\\\\[\"\\\\n])*)\",?");
    private static final List<String> TYPES = List.of("counter", "gauge", "histogram", "summary", "untyped");

    record Sample(String name, Map<String, String> labels, double value) {
    }

    record Family(String name, String type, String help, List<Sample> samples) {
        /** The sum of the samples named {@code sample} whose labels include {@code match}. */
        double sum(String sample, Map<String, String> match) {
            return samples.stream().filter(s -> s.name().equals(sample))
                    .filter(s -> s.labels().entrySet().containsAll(match.entrySet())).mapToDouble(Sample::value).sum();
        }
    }

    private PromText() {
    }

    static Map<String, Family> parse(String text) {
        Map<String, Family> families = new LinkedHashMap<>();
        Map<String, String> help = new LinkedHashMap<>();
        Family current = null;
        int n = 0;
        for (String line : text.split("\n", -1)) {
            n++;
            if (line.isEmpty()) {
                continue;
            }
            if (line.startsWith("# HELP ")) {
                String[] p = line.substring(7).split(" ", 2);
                check(NAME.matcher(p[0]).matches(), n, line);
                check(help.put(p[0], p.length > 1 ? p[1] : "") == null, n, "second HELP: " + line);
            } else if (line.startsWith("# TYPE ")) {
                String[] p = line.substring(7).split(" ");
                check(p.length == 2 && NAME.matcher(p[0]).matches() && TYPES.contains(p[1]), n, line);
                check(!families.containsKey(p[0]), n, "family declared twice: " + line);
                current = new Family(p[0], p[1], help.get(p[0]), new ArrayList<>());
                families.put(p[0], current);
            } else if (line.startsWith("#")) {
                continue; // a comment
            } else {
                check(current != null, n, "sample before any TYPE: " + line);
                Sample s = sample(line, n);
                check(belongs(s.name(), current), n, "sample outside its family " + current.name() + ": " + line);
                current.samples().add(s);
            }
        }
        families.values().forEach(PromText::checkHistogram);
        return families;
    }

    private static boolean belongs(String sample, Family f) {
        if (sample.equals(f.name())) {
            return true;
        }
        List<String> suffixes = switch (f.type()) {
            case "counter" -> List.of("_total", "_created");
            case "histogram" -> List.of("_bucket", "_count", "_sum", "_created");
            case "summary" -> List.of("_count", "_sum", "_created");
            case "gauge" -> List.of("_created");
            default -> List.of();
        };
        return suffixes.stream().anyMatch(x -> sample.equals(f.name() + x));
    }

    private static Sample sample(String line, int n) {
        Matcher m = SAMPLE.matcher(line);
        check(m.matches(), n, "not a sample: " + line);
        Map<String, String> labels = new LinkedHashMap<>();
        if (m.group(3) != null) {
            Matcher l = LABEL.matcher(m.group(3));
            int at = 0;
            while (at < m.group(3).length()) {
                check(l.find(at) && l.start() == at, n, "bad labels: " + line);
                check(labels.put(l.group(1), l.group(2)) == null, n, "label twice: " + line);
                at = l.end();
            }
        }
        return new Sample(m.group(1), labels, value(m.group(4), n, line));
    }

    private static double value(String v, int n, String line) {
        switch (v) {
            case "+Inf":
                return Double.POSITIVE_INFINITY;
            case "-Inf":
                return Double.NEGATIVE_INFINITY;
            case "NaN":
                return Double.NaN;
            default:
                try {
                    return Double.parseDouble(v);
                } catch (NumberFormatException e) {
                    throw new AssertionError("line " + n + ": value " + v + " is not a number: " + line);
                }
        }
    }

    /** A histogram's series: buckets ascending by le, ending with +Inf equal to _count; a _sum for each. */
    private static void checkHistogram(Family f) {
        if (!f.type().equals("histogram")) {
            return;
        }
        Map<Map<String, String>, List<Sample>> series = new LinkedHashMap<>();
        for (Sample s : f.samples()) {
            if (s.name().endsWith("_bucket")) {
                Map<String, String> key = new LinkedHashMap<>(s.labels());
                key.remove("le");
                series.computeIfAbsent(key, k -> new ArrayList<>()).add(s);
            }
        }
        series.forEach((key, buckets) -> {
            double last = -1;
            for (Sample b : buckets) {
                check(b.value() >= last, 0, f.name() + " buckets not cumulative " + key);
                last = b.value();
            }
            Sample inf = buckets.get(buckets.size() - 1);
            check("+Inf".equals(inf.labels().get("le")), 0, f.name() + " has no +Inf bucket " + key);
            check(f.sum(f.name() + "_count", key) == inf.value(), 0, f.name() + " _count differs from +Inf " + key);
            check(f.samples().stream().anyMatch(s -> s.name().equals(f.name() + "_sum") && s.labels().equals(key)), 0,
                    f.name() + " has no _sum " + key);
        });
    }

    private static void check(boolean ok, int line, String what) {
        if (!ok) {
            throw new AssertionError("line " + line + ": " + what);
        }
    }
}
