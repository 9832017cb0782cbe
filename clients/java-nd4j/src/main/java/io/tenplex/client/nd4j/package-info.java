/**
 * ND4J interop for the tenplex JVM client ({@code tenplex-nd4j}): {@link io.tenplex.client.nd4j.Nd4jTensors}
 * converts tensors to and from {@code INDArray}s, {@link io.tenplex.client.nd4j.StateComparison} compares
 * saved states numerically ({@code tenplex verify}), {@link io.tenplex.client.nd4j.Export} casts their
 * floating-point tensors ({@code tenplex export}). Brings ND4J and its native backend; plain REST use
 * needs only {@code tenplex-client}.
 */
package io.tenplex.client.nd4j;
