/**
 * The FUSE view owns the mounted file-system presentation of the store's namespace and of dataset
 * partitions; the jnr-fuse adapter stays thin over a plain, mount-free logic class.
 */
package io.tenplex.fuse;
