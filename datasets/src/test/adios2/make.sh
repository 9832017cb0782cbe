#!/bin/sh
# Regenerates datasets/src/test/resources/adios2 with the real ADIOS2 library, in a Debian trixie
# chroot (as root) that has libadios2-serial-c-dev, adios2-serial-bin and gcc installed:
#   datasets/src/test/adios2/make.sh "$(bin/lib/adios2-env.sh path)"   (after bin/lib/adios2-env.sh build)
set -eu
root=$1
here=$(cd "$(dirname "$0")" && pwd)
res=$here/../resources/adios2
work=$root/tmp/adios2-gen
rm -rf "$work" && mkdir -p "$work/out"
cp "$here/gen.c" "$here/dump.c" "$work/"
chroot "$root" sh -c '
  set -e
  cd /tmp/adios2-gen
  flags="-I/usr/include/adios2/build/serial -I/usr/include/adios2 -ladios2_serial_c"
  gcc -O1 -o gen gen.c $flags
  gcc -O1 -o dump dump.c $flags
  ./gen out
  for f in bp4 bp5; do
    mkdir -p out/$f.ref
    ./dump out/$f.bp out/$f.ref
    bpls.serial -l out/$f.bp > out/$f.bpls.txt
    bpls.serial -l -D out/$f.bp > out/$f.blocks.txt
  done
  dpkg-query -W -f "\${Version}\n" libadios2-serial-c-dev > out/adios2-version.txt'
rm -rf "$res/bp4.bp" "$res/bp5.bp" "$res/bp4.ref" "$res/bp5.ref"
mkdir -p "$res"
cp -r "$work/out/"* "$res/"
rm -rf "$work" "$res"/bp4.bp/profiling.json "$res"/bp5.bp/profiling.json
