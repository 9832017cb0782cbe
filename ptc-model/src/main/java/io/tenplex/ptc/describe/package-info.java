/**
 * Model descriptions nobody has to write: partition rules (name patterns to partitions, shipped for
 * Megatron-LM and torch.nn transformers, the same JSON files the Python client reads) and the
 * inference of a whole {@link io.tenplex.ptc.Model} from the shards every rank saved under a known
 * configuration. Pure (JDK and Jackson only); a description that is ambiguous or inconsistent is
 * refused with a message naming the tensor, the configuration and what does not fit.
 */
package io.tenplex.ptc.describe;
