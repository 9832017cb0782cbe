/**
 * Blob memory owns the bytes of tensors and files: a budgeted allocator with exact accounting over a
 * pluggable backing (off-heap chunks today), reference-counted blobs of any size (chunked past
 * 2 GiB), per-block CRC32C checksums, and sealed shared-memory segments whose bytes become blobs
 * without a copy.
 */
package io.tenplex.store.memory;
