/**
 * Recovery around a lost worker: which copy of each of its ranks survives (partner copies, parity,
 * durable directories) and the plan's sources placed on them.
 */
package io.tenplex.jobs.recovery;
