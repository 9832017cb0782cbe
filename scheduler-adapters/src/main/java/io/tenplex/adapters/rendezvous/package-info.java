/**
 * The torchrun rendezvous the daemon hosts: which nodes (torchrun agents) of a job form each round, and
 * the resource change that saves and moves the job's state between rounds ({@link
 * io.tenplex.adapters.rendezvous.Rendezvous}).
 */
package io.tenplex.adapters.rendezvous;
