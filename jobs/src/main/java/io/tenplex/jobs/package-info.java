/**
 * The job lifecycle's facade: {@link io.tenplex.jobs.Jobs} over the packages below it, with the stop
 * flags and the jobs a daemon knows, and what the facade delegates to: the cluster's defaults, the
 * checkpoint levels and recovery, planning a reconfiguration, the registries of the parts and
 * reconfigurations a daemon runs, and sealing a save across the cluster. The packages sit on floors,
 * top to bottom: {@code recovery}, {@code reconfigure}, {@code shared}, {@code tiers}, {@code durable},
 * {@code generations}, {@code common}; a package imports only the packages below it (the build checks
 * it: {@code jobs/import-control.xml}).
 */
package io.tenplex.jobs;
