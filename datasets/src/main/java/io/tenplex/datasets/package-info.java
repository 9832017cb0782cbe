/**
 * Dataset mounts on a daemon: the rank views of a job's data partition (prototype and simple
 * layouts), the sample bytes behind them loaded ahead of training from peers or the source, and the
 * index builders for common file formats.
 */
package io.tenplex.datasets;
