/**
 * Checkpoint levels beyond a daemon's memory: partner copies (L2) of every worker's rank trees on the
 * next workers of the job's ring, and which worker holds which copy.
 */
package io.tenplex.jobs.tiers;
