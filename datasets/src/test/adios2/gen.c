/*
 * Writes the ADIOS2 test files of io.tenplex.datasets.adios2 with the real ADIOS2 library, one
 * directory per engine: bp4.bp (engine BP4) and bp5.bp (engine BP5, the 2.10 default).
 *
 * Build and run (in a Debian trixie chroot with libadios2-serial-c-dev and gcc, see make.sh):
 *   gcc -O1 -o gen gen.c -I/usr/include/adios2/build/serial -I/usr/include/adios2 -ladios2_serial_c
 *   ./gen <outdir>
 *
 * Every variable has a global shape; values are distinct per element and step (see value()):
 *   i8 u8 i16 u16 i32 u32 i64 u64 f32 f64  [7,3] of each primitive type, steps 0..2
 *   one_row  double [1,4], steps 0..2
 *   vec      int32 [5] (one dimension: each row is one element), steps 0..2
 *   cube     double [3,2,4], steps 0..2
 *   blocks   float [10,6] written as three blocks per step (a 2-D decomposition of "writers":
 *            rows 0..3 x cols 0..5, rows 4..9 x cols 0..2, rows 4..9 x cols 3..5), steps 0..2
 *   late     int16 [2,3], written in steps 1 and 2 only
 *   cplx     float complex [2,2], steps 0..2
 * and what the reader must refuse:
 *   local    int32 local array (no global shape), count [4]
 *   scalar   int32 global value (no dimensions)
 *   text     string
 *   grows    int32 [1+step, 2]: a shape that changes between steps
 *   squeezed double [200,2] compressed with bzip2
 */
#include <adios2_c.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define STEPS 3
enum { R = 7, C = 3 };

/* Element k of step s of variable number n, as a double (converted to the variable's type). */
static double value(int n, int s, size_t k) { return (n + 1) * 1000.0 * (s + 1) - 37.0 * k + 0.25 * (k % 4); }

static void put(adios2_engine *e, adios2_variable *v, adios2_type t, int n, int s, size_t len) {
    unsigned char buf[8 * 64];
    for (size_t k = 0; k < len; k++) {
        double x = value(n, s, k);
        switch (t) {
        case adios2_type_int8_t: ((int8_t *)buf)[k] = (int8_t)(int)x; break;
        case adios2_type_uint8_t: ((uint8_t *)buf)[k] = (uint8_t)(int)x; break;
        case adios2_type_int16_t: ((int16_t *)buf)[k] = (int16_t)x; break;
        case adios2_type_uint16_t: ((uint16_t *)buf)[k] = (uint16_t)(int)x; break;
        case adios2_type_int32_t: ((int32_t *)buf)[k] = (int32_t)x * 65537; break;
        case adios2_type_uint32_t: ((uint32_t *)buf)[k] = (uint32_t)((int64_t)x * 131071); break;
        case adios2_type_int64_t: ((int64_t *)buf)[k] = (int64_t)x * 4294967311LL; break;
        case adios2_type_uint64_t: ((uint64_t *)buf)[k] = (uint64_t)((int64_t)x * -3LL); break;
        case adios2_type_float: ((float *)buf)[k] = (float)(x / 3.0); break;
        case adios2_type_double: ((double *)buf)[k] = x / 7.0; break;
        case adios2_type_float_complex: ((float *)buf)[k] = (float)x; break; /* len counts floats */
        default: break;
        }
    }
    adios2_put(e, v, buf, adios2_mode_sync);
}

static void write(const char *dir, const char *engine, const char *file) {
    static const adios2_type types[] = {adios2_type_int8_t, adios2_type_uint8_t, adios2_type_int16_t,
        adios2_type_uint16_t, adios2_type_int32_t, adios2_type_uint32_t, adios2_type_int64_t,
        adios2_type_uint64_t, adios2_type_float, adios2_type_double};
    static const char *names[] = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64"};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    adios2_adios *adios = adios2_init_serial();
    adios2_io *io = adios2_declare_io(adios, engine);
    adios2_set_engine(io, engine);
    size_t shape[3] = {R, C}, zero[3] = {0, 0, 0};
    adios2_variable *v[10];
    for (int i = 0; i < 10; i++)
        v[i] = adios2_define_variable(io, names[i], types[i], 2, shape, zero, shape, adios2_constant_dims_true);
    size_t s14[2] = {1, 4}, s5[1] = {5}, s324[3] = {3, 2, 4}, s106[2] = {10, 6}, s23[2] = {2, 3};
    size_t s22[2] = {2, 2}, c4[1] = {4}, s62[2] = {200, 2}, g[2] = {1, 2};
    adios2_variable *oneRow = adios2_define_variable(io, "one_row", adios2_type_double, 2, s14, zero, s14, 1);
    adios2_variable *vec = adios2_define_variable(io, "vec", adios2_type_int32_t, 1, s5, zero, s5, 1);
    adios2_variable *cube = adios2_define_variable(io, "cube", adios2_type_double, 3, s324, zero, s324, 1);
    adios2_variable *blocks = adios2_define_variable(io, "blocks", adios2_type_float, 2, s106, zero, s106, 0);
    adios2_variable *late = adios2_define_variable(io, "late", adios2_type_int16_t, 2, s23, zero, s23, 1);
    adios2_variable *cplx = adios2_define_variable(io, "cplx", adios2_type_float_complex, 2, s22, zero, s22, 1);
    adios2_variable *local = adios2_define_variable(io, "local", adios2_type_int32_t, 1, NULL, NULL, c4, 1);
    adios2_variable *scalar = adios2_define_variable(io, "scalar", adios2_type_int32_t, 0, NULL, NULL, NULL, 1);
    adios2_variable *text = adios2_define_variable(io, "text", adios2_type_string, 0, NULL, NULL, NULL, 1);
    adios2_variable *grows = adios2_define_variable(io, "grows", adios2_type_int32_t, 2, g, zero, g, 0);
    adios2_variable *squeezed = adios2_define_variable(io, "squeezed", adios2_type_double, 2, s62, zero, s62, 1);
    size_t op;
    adios2_add_operation(&op, squeezed, adios2_define_operator(adios, "bz", "bzip2"), "blockSize100k", "9");
    adios2_engine *e = adios2_open(io, path, adios2_mode_write);
    for (int s = 0; s < STEPS; s++) {
        adios2_step_status status;
        adios2_begin_step(e, adios2_step_mode_append, -1.0f, &status);
        for (int i = 0; i < 10; i++)
            put(e, v[i], types[i], i, s, R * C);
        put(e, oneRow, adios2_type_double, 10, s, 4);
        put(e, vec, adios2_type_int32_t, 11, s, 5);
        put(e, cube, adios2_type_double, 12, s, 24);
        /* three blocks, each filled with its own values (block b as variable 13 + b) */
        size_t st[3][2] = {{0, 0}, {4, 0}, {4, 3}}, ct[3][2] = {{4, 6}, {6, 3}, {6, 3}};
        for (int b = 0; b < 3; b++) {
            adios2_set_selection(blocks, 2, st[b], ct[b]);
            put(e, blocks, adios2_type_float, 13 + b, s, ct[b][0] * ct[b][1]);
        }
        if (s > 0)
            put(e, late, adios2_type_int16_t, 16, s, 6);
        put(e, cplx, adios2_type_float_complex, 17, s, 8);
        put(e, local, adios2_type_int32_t, 18, s, 4);
        int32_t one = s;
        adios2_put(e, scalar, &one, adios2_mode_sync);
        adios2_put(e, text, "hello", adios2_mode_sync);
        size_t gs[2] = {1 + s, 2};
        adios2_set_shape(grows, 2, gs);
        adios2_set_selection(grows, 2, zero, gs);
        put(e, grows, adios2_type_int32_t, 19, s, gs[0] * 2);
        static double zeros[400]; /* compressible, so bzip2 does not expand it */
        zeros[0] = s;
        adios2_put(e, squeezed, zeros, adios2_mode_sync);
        adios2_end_step(e);
    }
    adios2_close(e);
    adios2_finalize(adios);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    write(dir, "BP4", "bp4.bp");
    write(dir, "BP5", "bp5.bp");
    return 0;
}
