/**
 * A reconfiguration: the coordinator ({@link io.tenplex.jobs.reconfigure.Reconfiguration}, with its
 * source checks, its calls on the parts and its progress) and the part of the plan each daemon runs
 * ({@link io.tenplex.jobs.reconfigure.PartRunner}), plan parts and their paths, in-doubt resolution,
 * the model a plan is made with, values no description places, sources and sinks of the copies, and
 * planned flow rates.
 */
package io.tenplex.jobs.reconfigure;
