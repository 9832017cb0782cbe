/**
 * The downtime of a reconfiguration: what the ranks report of its phases ({@link RankReport}), kept per
 * job and step ({@link DowntimeReports}), joined with the daemon's own times ({@link ChangeTimes}) into
 * one split ({@link DowntimeSplit}) that a resource change's status, the job's downtime route and
 * {@code /metrics} ({@link DowntimeMetrics}) report.
 */
package io.tenplex.adapters.downtime;
