#!/usr/bin/env bash
# The ADIOS2 environment: a Debian trixie chroot with ADIOS2 2.10 (the serial C library and headers,
# bpls and the other tools, the Python module adios2) and gcc, which Debian bookworm lacks. What
# bench/adios2-read.sh reads with and datasets/src/test/adios2/make.sh writes the test files with; the
# tests themselves need none of it (the files and ADIOS2's dumps of them are committed).
#
#   bin/lib/adios2-env.sh build|check|path   as bin/lib/torch2-env.sh (the same build, another package list)
#
# TENPLEX_ADIOS2_ROOT names the directory (default /var/cache/tenplex-adios2). Building needs root.
TENPLEX_TRIXIE_PROFILE=adios2 exec "$(dirname "${BASH_SOURCE[0]}")/torch2-env.sh" "$@"
