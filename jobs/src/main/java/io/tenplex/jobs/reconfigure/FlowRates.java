package io.tenplex.jobs.reconfigure;

import io.tenplex.transform.Piece;
import io.tenplex.transform.Plan;
import io.tenplex.transform.ShardPlan;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The rate of every inter-worker flow of a plan that makes all flows finish together, when the busiest
 * link does: a flow of {@code b} bytes gets {@code b / T}, where {@code T} is the most bytes any worker
 * sends or receives divided by the usable link rate. No link is then asked for more than it carries.
 *
 * <p>Why: TCP shares a link between its flows, not by what they still have to move, and gives a flow
 * that crosses two busy links (a busy sender's uplink and a busy receiver's downlink) far less than
 * its share of either. On links shaped to 100 Mbit/s, iperf3 measured 19 Mbit/s for such flows
 * against 75 for flows crossing one busy link; the fast flows finish early and the slow ones are left
 * to finish alone. Capped at these rates, the same six flows got 46-48 Mbit/s each.
 */
public final class FlowRates {
    /** The share of the link rate planned for payload: TCP/IP and Ethernet headers take about 4.5%. */
    public static final double USABLE = 0.93;

    private FlowRates() {
    }

    /**
     * The rates of the flows into {@code worker} of a part its daemon planned itself
     * ({@code transform.LocalPlanner}): its own flows, a remote piece counted once however many of the
     * worker's ranks need it (they share one fetch), over the time the busiest worker of the whole
     * change needs, as the part's report gives it (a remote piece counted the same way).
     *
     * @return source worker -> bytes/s, empty when nothing crosses workers
     */
    public static Map<Integer, Long> ownRates(Plan part, int worker, long linkBitsPerSecond) {
        if (linkBitsPerSecond <= 0) {
            throw new IllegalArgumentException("link rate must be positive");
        }
        Map<Integer, Long> in = new TreeMap<>();
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (ShardPlan s : part.shardsOf(worker)) {
            for (Piece p : s.pieces()) {
                int source = p.sourceDevice() != null ? p.sourceDevice().worker() : part.sourceDevice(p.sourceRank()).worker();
                if (source != worker && p.kind() != Piece.Kind.KEEP
                        && seen.add(s.tensor() + " " + p.sourceKey() + p.global() + java.util.Arrays.toString(p.replicas()))) {
                    in.merge(source, p.bytes(), Long::sum);
                }
            }
        }
        long busiest = Math.max(part.report().maxSent(), part.report().receivedByWorker().values().stream()
                .mapToLong(Long::longValue).max().orElse(0));
        Map<Integer, Long> rates = new TreeMap<>();
        if (busiest == 0) {
            return rates;
        }
        double seconds = busiest / (linkBitsPerSecond / 8.0 * USABLE);
        in.forEach((source, bytes) -> rates.put(source, Math.max(1, (long) Math.ceil(bytes / seconds))));
        return rates;
    }

    /** Parses a link rate in bits per second: a number, or with tc's units {@code kbit}, {@code mbit}, {@code gbit}. */
    public static long parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        long unit = 1;
        for (String[] u : new String[][] {{"kbit", "1000"}, {"mbit", "1000000"}, {"gbit", "1000000000"}, {"bit", "1"}}) {
            if (t.endsWith(u[0])) {
                unit = Long.parseLong(u[1]);
                t = t.substring(0, t.length() - u[0].length()).trim();
                break;
            }
        }
        double v;
        try {
            v = Double.parseDouble(t);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("link rate '" + text + "' is not a number of bits/s such as 100mbit or 10gbit");
        }
        if (!(v > 0) || v * unit > 1e13) {
            throw new IllegalArgumentException("link rate '" + text + "' must be above 0 and at most 10000gbit");
        }
        return Math.round(v * unit);
    }
}
