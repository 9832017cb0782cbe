/**
 * The state transformer owns reconfiguration plans: it compares a parallelizable tensor collection
 * under the old configuration with the one under the new configuration and emits an immutable plan of
 * split, move and merge pieces, executed against ports. Pure Java; no Netty, no FUSE.
 */
package io.tenplex.transform;
