/**
 * The job lifecycle's facade: {@link io.tenplex.jobs.Jobs} over the packages below it, with the stop
 * flags and the jobs a daemon knows. The packages sit on floors, top to bottom: {@code recovery},
 * {@code reconfigure}, {@code shared}, {@code tiers}, {@code durable}, {@code generations},
 * {@code common}; a package imports only the packages below it (the build checks it:
 * {@code jobs/import-control.xml}).
 */
package io.tenplex.jobs;
