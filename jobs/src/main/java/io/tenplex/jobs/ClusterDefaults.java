package io.tenplex.jobs;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalInt;

/**
 * The cluster as this daemon sees it, and the defaults a request that names none falls back on: the
 * daemons of the cluster ({@code --peers}), the address other daemons reach this one at (and so its
 * worker), every worker's link rate, and how long a prepared part waits for the coordinator. Set at
 * start (tests change them), read by any thread.
 */
final class ClusterDefaults {
    private volatile Duration preparedTimeout = Jobs.DEFAULT_PREPARED_TIMEOUT;
    private volatile long linkRate;
    private volatile String selfAddress = "";
    private volatile Map<Integer, InetSocketAddress> defaultDaemons = Map.of();

    /** How long a prepared part waits for the coordinator's commit or abort before it asks the others. */
    Duration preparedTimeout() {
        return preparedTimeout;
    }

    void setPreparedTimeout(Duration timeout) {
        this.preparedTimeout = timeout;
    }

    /** Every worker's link rate in bits/s used when a reconfiguration names none (0: flows left to TCP). */
    long linkRate() {
        return linkRate;
    }

    void setLinkRate(long bitsPerSecond) {
        this.linkRate = bitsPerSecond;
    }

    /** The address ({@code host:port}) other daemons reach this one at, or empty when not set. */
    String selfAddress() {
        return selfAddress;
    }

    void setSelfAddress(InetSocketAddress address) {
        this.selfAddress = SelfWorker.address(address);
    }

    /** The daemons of the cluster (worker to address) used when a request names none. */
    Map<Integer, InetSocketAddress> daemons() {
        return defaultDaemons;
    }

    void setDaemons(Map<Integer, InetSocketAddress> daemons) {
        this.defaultDaemons = Map.copyOf(daemons);
    }

    /** {@code given}, or the defaults when it names none. */
    Map<Integer, InetSocketAddress> daemons(Map<Integer, InetSocketAddress> given) {
        return given.isEmpty() ? defaultDaemons : given;
    }

    /** This daemon's worker number: the daemon of the cluster at its own address, if any. */
    OptionalInt selfWorker() {
        return SelfWorker.find(selfAddress, defaultDaemons);
    }
}
