/**
 * Dataset mounts on a daemon, as a typed Java API ({@link io.tenplex.datasets.DatasetService} and
 * its request and status records): the rank views of a job's data partition (prototype and simple
 * layouts), the sample bytes behind them loaded ahead of training from the previous mount, from
 * peers ({@link io.tenplex.datasets.ShardPeers}) or from the source, and the heap and memory
 * budgets they are held to. The wire (routes, JSON, the peer protocol) is in the server module.
 */
package io.tenplex.datasets;
