/**
 * Checkpoint generations: seals and their manifests, complete generations and the events that tiers
 * subscribe to, which generation a rank loads, rollback of a failed reconfiguration's output, lost
 * generations, the levels a job keeps, and the job metrics.
 */
package io.tenplex.jobs.generations;
