/**
 * Scheduler adapters own how the outside world asks for a change of a job's resources (REST, schedule
 * files, Kubernetes), the parallelizer SPI, and the reconfiguration coordinator.
 */
package io.tenplex.adapters;
