/**
 * Array sources: rows along the first dimension of an HDF5 dataset or a NetCDF-4 variable (a
 * NetCDF-4 file is an HDF5 file) as dataset samples, read with jHDF. A source is named by a URL
 * {@code hdf5:///<file>#<dataset>} or {@code netcdf:///<file>#<variable>}; the byte ranges an index
 * gives for such a source are offsets into the array's bytes in C order, as stored (contiguous,
 * compact, or chunked with its chunks decoded), so row {@code i} is bytes
 * {@code [i * rowBytes, (i + 1) * rowBytes)}.
 */
package io.tenplex.datasets.hdf5;
