/**
 * The downtime of a reconfiguration: what the ranks report of its phases ({@link RankReport}), checked
 * against the resource change it belongs to ({@link ReportRules}), kept by that change per step
 * ({@link ChangeReports}), joined with the daemon's own times ({@link ChangeTimes}) into one split
 * ({@link DowntimeSplit}) that a resource change's status, the job's downtime route and {@code /metrics}
 * ({@link DowntimeMetrics}) report.
 */
package io.tenplex.adapters.downtime;
