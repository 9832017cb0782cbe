/*
 * The reference of the ADIOS2 tests: reads every global array variable of a BP file with ADIOS2's own
 * reader, step by step, and appends each step's whole global array (row-major, little-endian, as
 * ADIOS2 returns it) to <outdir>/<variable>.bin, so that a variable written over S steps of N rows
 * is its S x N rows in step order. Local arrays, global values and strings are skipped.
 *
 *   gcc -O1 -o dump dump.c -I/usr/include/adios2/build/serial -I/usr/include/adios2 -ladios2_serial_c
 *   ./dump <file.bp> <outdir>
 */
#include <adios2_c.h>
#include <stdio.h>
#include <stdlib.h>

static size_t size_of(adios2_type t) {
    switch (t) {
    case adios2_type_int8_t: case adios2_type_uint8_t: return 1;
    case adios2_type_int16_t: case adios2_type_uint16_t: return 2;
    case adios2_type_int32_t: case adios2_type_uint32_t: case adios2_type_float: return 4;
    case adios2_type_int64_t: case adios2_type_uint64_t: case adios2_type_double:
    case adios2_type_float_complex: return 8;
    case adios2_type_double_complex: return 16;
    default: return 0;
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: dump <file.bp> <outdir>\n");
        return 2;
    }
    adios2_adios *adios = adios2_init_serial();
    adios2_io *io = adios2_declare_io(adios, "dump");
    adios2_engine *e = adios2_open(io, argv[1], adios2_mode_read);
    adios2_step_status status;
    while (adios2_begin_step(e, adios2_step_mode_read, -1.0f, &status) == adios2_error_none
           && status == adios2_step_status_ok) {
        adios2_variable **vars;
        size_t n;
        adios2_inquire_all_variables(&vars, &n, io);
        for (size_t i = 0; i < n; i++) {
            if (vars[i] == NULL) /* the C bindings give no handle for some (strings) */
                continue;
            char name[256];
            size_t len = sizeof name - 1;
            adios2_variable_name(name, &len, vars[i]);
            name[len] = 0;
            adios2_type t;
            adios2_shapeid id;
            size_t nd, shape[8], start[8] = {0}, total;
            adios2_variable_type(&t, vars[i]);
            adios2_variable_shapeid(&id, vars[i]);
            adios2_variable_ndims(&nd, vars[i]);
            if (size_of(t) == 0 || id != adios2_shapeid_global_array || nd == 0 || nd > 8)
                continue;
            adios2_variable_shape(shape, vars[i]);
            total = size_of(t);
            for (size_t d = 0; d < nd; d++)
                total *= shape[d];
            adios2_set_selection(vars[i], nd, start, shape);
            void *buf = malloc(total);
            if (adios2_get(e, vars[i], buf, adios2_mode_sync) != adios2_error_none)
                return 1;
            char out[4096];
            snprintf(out, sizeof out, "%s/%s.bin", argv[2], name);
            FILE *f = fopen(out, "ab");
            fwrite(buf, 1, total, f);
            fclose(f);
            free(buf);
        }
        free(vars);
        adios2_end_step(e);
    }
    adios2_close(e);
    adios2_finalize(adios);
    return 0;
}
