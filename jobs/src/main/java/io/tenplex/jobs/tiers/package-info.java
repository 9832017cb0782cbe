/**
 * Checkpoint levels beyond a daemon's memory: partner copies (L2) of every worker's rank trees on the
 * next workers of the job's ring, and which worker holds which copy; erasure-coded groups (L3), the
 * rebuild of a lost member from them, and its fallback to the lost worker's durable copy (L4).
 */
package io.tenplex.jobs.tiers;
