package io.tenplex.ptc.describe;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.Partition;
import io.tenplex.ptc.Placement;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Name patterns to partitions, read in order; the first rule that matches a name wins (docs/PTC.md,
 * "Your own model"). The JSON form is {@code {"rules": [{"match": "*.linear1.*", "partition":
 * "column"}, ...]}}: {@code column} (split dim 0), {@code row} (split dim 1), {@code replicated},
 * {@code vocab} (padded to {@code divisibleBy}·T, its unpadded {@code size} given for inference),
 * {@code expert} ({@code {e}} in the pattern, {@code experts}, {@code inner}), or the model spec's
 * object form; optional {@code granule}, {@code stage} (first or last) and {@code tiedTo} (the
 * original of a tied copy). A number may be {@code "${name}"}, taken from the parameters given.
 * Immutable.
 */
public final class PartitionRules {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final List<Rule> rules;

    /** One rule: its pattern and what it says. */
    record Rule(Glob glob, Partition partition, Placement.Kind stage, Long size, String tiedTo, String source) {}

    /**
     * What the first matching rule says about one name.
     *
     * @param stage FIRST or LAST, or null when the rule places nothing
     * @param size the unpadded size of a vocabulary dimension, or null
     * @param tiedTo the original of a tied copy, or null
     */
    public record Match(String rule, Partition partition, Placement.Kind stage, Long size, String tiedTo) {}

    private PartitionRules(List<Rule> rules) {
        this.rules = List.copyOf(rules);
    }

    /** Rules from JSON text; {@code params} fills {@code "${name}"} numbers. */
    public static PartitionRules parse(String json, Map<String, Long> params) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (IOException e) {
            throw new IllegalArgumentException("rules are not valid JSON: " + e.getMessage().lines().findFirst().orElse(""));
        }
        JsonNode items = root != null && root.isObject() ? root.path("rules") : root;
        if (items == null || !items.isArray()) {
            throw new IllegalArgumentException("rules: expected {\"rules\": [...]} or a list of rules");
        }
        List<Rule> out = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            out.add(RuleJson.rule(items.get(i), "rule #" + i, params));
        }
        return new PartitionRules(out);
    }

    /** The shipped rules {@code megatron} or {@code transformer}. */
    public static PartitionRules shipped(String name, Map<String, Long> params) {
        try (InputStream in = PartitionRules.class.getResourceAsStream(name + ".json")) {
            if (in == null || !name.matches("[a-z]+")) {
                throw new IllegalArgumentException("no shipped rules '" + name + "' (shipped: megatron, transformer)");
            }
            return parse(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8), params);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the shipped rules " + name, e);
        }
    }

    /** These rules, then {@code more} (read after them). */
    public PartitionRules then(PartitionRules more) {
        List<Rule> all = new ArrayList<>(rules);
        all.addAll(more.rules);
        return new PartitionRules(all);
    }

    /** What the first rule matching {@code name} says, if any. */
    public Optional<Match> match(String name) {
        for (Rule r : rules) {
            int e = r.glob().match(name);
            if (e < 0) {
                continue;
            }
            Partition p = r.partition() instanceof Partition.Expert x ? new Partition.Expert(e, x.experts(), x.inner())
                    : r.partition();
            return Optional.of(new Match(r.glob() + " (" + r.source() + ")", p, r.stage(), r.size(), r.tiedTo()));
        }
        return Optional.empty();
    }

    public int size() {
        return rules.size();
    }

    @Override
    public String toString() {
        return rules.stream().map(r -> r.glob().toString()).toList().toString();
    }
}
