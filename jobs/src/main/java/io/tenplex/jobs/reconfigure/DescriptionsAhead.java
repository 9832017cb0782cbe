package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.ptc.Model;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;

/**
 * The model's description, and the workers' addresses', sent ahead of a change while the job still
 * trains towards its stop step (plan ahead): the daemons of the new placement then have them when the
 * definition arrives, and a job's first change does not send them (a megabyte per daemon for a
 * GPT-3-shaped model, tens of kilobytes of addresses at thousands of devices) in its downtime. Best effort: a daemon that did not get it, or dropped it since, asks for it when the
 * definition arrives ({@link ChangePosts}). A daemon sent a description is remembered (for the last
 * {@value #REMEMBERED} job and description pairs), so later changes do not send it again.
 */
public final class DescriptionsAhead {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(DescriptionsAhead.class);
    static final int REMEMBERED = 256;

    private final Map<String, Set<InetSocketAddress>> sent = new LinkedHashMap<>(16, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Set<InetSocketAddress>> eldest) {
            return size() > REMEMBERED;
        }
    };

    /**
     * Sends {@code model}'s description of {@code job}, and that of the workers' {@code addresses}, to
     * each of {@code daemons} not sent it before, at most {@link ChangePosts#IN_FLIGHT} at once, on
     * {@code background}.
     *
     * @return completes when every daemon answered (or failed: logged, never an error)
     */
    public CompletableFuture<Void> send(DaemonClient client, String job, Model model,
            Map<Integer, InetSocketAddress> addresses, Collection<InetSocketAddress> daemons, Executor background) {
        return CompletableFuture.allOf(send(client, job, "model", Descriptions.model(model), daemons, background),
                send(client, job, "addresses", Descriptions.addresses(PlanParts.addresses(addresses)), daemons,
                        background));
    }

    /**
     * Plan ahead on every daemon of the new placement: sends the descriptions of the model and the
     * addresses (as {@link #send(DaemonClient, String, Model, Map, Collection, Executor)}), then the
     * change's definition as known ahead ({@link LocalDefinition#ahead}), so that each daemon plans its
     * own part while the job trains and the change only binds it to the saved layouts. Best effort: a
     * daemon that did not plan ahead plans when the change comes.
     *
     * @return completes when every daemon answered (or failed: logged, never an error)
     */
    public CompletableFuture<Void> planAhead(DaemonClient client, ChangeSpec ahead, Model model,
            Map<Integer, InetSocketAddress> addresses, Executor background) {
        Map<Integer, InetSocketAddress> of = new java.util.TreeMap<>();
        ahead.participants().forEach(w -> {
            if (addresses.containsKey(w)) {
                of.put(w, addresses.get(w));
            }
        });
        return send(client, ahead.job(), model, addresses, of.values(), background).handleAsync((x, e) -> {
            ArrayDeque<CompletableFuture<String>> window = new ArrayDeque<>();
            int planned = 0;
            String why = null;
            for (var d : of.entrySet()) {
                if (window.size() == ChangePosts.IN_FLIGHT) {
                    String w = window.poll().join();
                    planned += w == null ? 1 : 0;
                    why = why != null ? why : w;
                }
                window.add(postAhead(client, d.getValue(), d.getKey(), ahead));
            }
            for (CompletableFuture<String> f : window) {
                String w = f.join();
                planned += w == null ? 1 : 0;
                why = why != null ? why : w;
            }
            LOG.info("{} of {} daemons of job {} planned their own parts ahead of the change ({} -> {}){}", planned,
                    of.size(), ahead.job(), ahead.from().config(), ahead.to().config(), why == null ? ""
                            : "; the others plan when it comes (first reason: " + why + ")");
            return null;
        }, background);
    }

    /** Why a daemon did not plan its part ahead, or null when it did; never fails. */
    private static CompletableFuture<String> postAhead(DaemonClient client, InetSocketAddress daemon, int worker,
            ChangeSpec ahead) {
        try {
            return client.postChangeAhead(daemon, worker, ahead).handle((a, x) -> x != null ? daemon + ": " + x
                    : a.missing().isEmpty() ? null : daemon + " lacks " + a.missing());
        } catch (RuntimeException e) {
            return CompletableFuture.completedFuture(daemon + ": " + e);
        }
    }

    private CompletableFuture<Void> send(DaemonClient client, String job, String what, byte[] bytes,
            Collection<InetSocketAddress> daemons, Executor background) {
        if (bytes.length > Descriptions.MAX_ONE) {
            return CompletableFuture.completedFuture(null); // no daemon keeps it: the change refuses it, with the sizes
        }
        String digest = Descriptions.digest(bytes);
        Set<InetSocketAddress> done;
        synchronized (sent) {
            done = sent.computeIfAbsent(job + " " + digest, k -> ConcurrentHashMap.newKeySet());
        }
        List<InetSocketAddress> todo = daemons.stream().distinct().filter(done::add).toList(); // being sent: not again
        if (todo.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        return CompletableFuture.runAsync(() -> {
            ArrayDeque<CompletableFuture<Void>> window = new ArrayDeque<>();
            int[] failed = {0};
            for (InetSocketAddress d : todo) {
                if (window.size() == ChangePosts.IN_FLIGHT) {
                    window.poll().join();
                }
                window.add(client.putDescription(d, job, digest, bytes).handle((x, e) -> {
                    if (e != null) {
                        done.remove(d); // sent again by a later plan ahead
                        synchronized (failed) {
                            failed[0]++;
                        }
                    }
                    return null;
                }));
            }
            window.forEach(CompletableFuture::join);
            LOG.info("{} description of job {} ({} bytes) sent ahead to {} daemons ({} did not take it: they "
                    + "ask for it with the change)", what, job, bytes.length, todo.size(), failed[0]);
        }, background);
    }
}
