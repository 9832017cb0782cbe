/**
 * The FUSE view of the store: {@link io.tenplex.fuse.FsLogic} (the file system, testable without a
 * mount) and {@link io.tenplex.fuse.TenplexFuse} (the thin jnr-fuse adapter and mount lifecycle).
 */
package io.tenplex.fuse;
