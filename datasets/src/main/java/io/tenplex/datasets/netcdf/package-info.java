/**
 * NetCDF classic array sources: variables of the classic formats (CDF-1, CDF-2 and CDF-5, what
 * netCDF-3 programs and PnetCDF write), read from their specification, their rows along the first
 * dimension as dataset samples. A variable is named {@code netcdf:///<file>#<variable>}, as a
 * NetCDF-4 one is; the byte ranges an index gives for it are offsets into its bytes in C order, as
 * stored (big-endian), so row {@code i} is bytes {@code [i * rowBytes, (i + 1) * rowBytes)}. A
 * fixed-size variable's rows are contiguous in the file; a record variable's row {@code i} is its
 * part of record {@code i}, gathered from the interleaved record layout. Every size and offset the
 * header gives is checked against the file and the limits before anything is allocated.
 */
package io.tenplex.datasets.netcdf;
