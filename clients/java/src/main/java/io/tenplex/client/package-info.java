/**
 * The JVM client of tenplexd over REST ({@code tenplex-client}): {@link io.tenplex.client.TenplexClient}
 * for tensors, files, sub-tensor reads, save/load of a state in the layout the Python client uses and
 * stop flags; {@link io.tenplex.client.Tensor} for the daemon's bytes; errors as
 * {@link io.tenplex.client.TenplexException} and {@link io.tenplex.client.NoCheckpoint}. Depends on the
 * JDK and Jackson only (ND4J interop is {@code tenplex-nd4j}).
 */
package io.tenplex.client;
