/**
 * The PTC model owns the pure vocabulary of tensors: element types, shapes, half-open index ranges,
 * regions (one range per dimension) with their algebra and wire syntax, and tensor metadata. It uses
 * only the JDK so that planners and stores can share it without pulling in I/O.
 */
package io.tenplex.ptc;
