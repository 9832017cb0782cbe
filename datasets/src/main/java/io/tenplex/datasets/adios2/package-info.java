/**
 * ADIOS2 array sources: global array variables of ADIOS2 BP4 and BP5 files (directories with
 * {@code md.idx}), read natively from the formats' layouts (BP5's FFS-encoded metadata included),
 * their rows along the first dimension as dataset samples and their steps as further rows, in step
 * order. A variable is named {@code adios2:///<dir.bp>#<variable>}; the byte ranges an index gives for
 * it are offsets into its bytes row-major and little-endian, as ADIOS2 returns them, so row {@code i}
 * is bytes {@code [i * rowBytes, (i + 1) * rowBytes)}. A variable written as several blocks (by the
 * writers of a decomposition) is assembled from them; every size and offset the metadata give is
 * checked against the files and the limits before anything is allocated. Local arrays, values,
 * strings, shapes that change between steps and operators (compression) are refused.
 */
package io.tenplex.datasets.adios2;
