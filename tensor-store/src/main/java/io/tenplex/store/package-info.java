/**
 * The tensor store owns a daemon's namespace tree of directories, files and tensors: path rules,
 * atomic create/replace, recursive delete, creation-order listing, the prototype's {@code .meta}
 * sidecar view, and region reads over off-heap bytes.
 */
package io.tenplex.store;
