#!/usr/bin/env bash
# The torch 2 environment: a Debian trixie chroot (python3-torch 2.6) that the Python suites also run
# in, next to the host's Debian bookworm torch 1.13. See docs/TORCH.md.
#
#   bin/lib/torch2-env.sh build   builds it, or keeps the cached one when its package list is current
#   bin/lib/torch2-env.sh check   exit 0 when it exists and is current, else 1 (says why)
#   bin/lib/torch2-env.sh path    prints its directory
#
# TENPLEX_TORCH2_ROOT names the directory (default /var/cache/tenplex-trixie); TENPLEX_TORCH2_MIRROR the
# Debian mirror (default http://deb.debian.org/debian). A build goes into a temporary directory next to
# it and is renamed into place only when complete, so an interrupted build never leaves half a chroot;
# the stamp file inside names the suite, mirror and package list, and a build runs again when they change.
# Building needs root (debootstrap). Running it is bin/lib/torch2-python's job.
set -euo pipefail

MIRROR="${TENPLEX_TORCH2_MIRROR:-http://deb.debian.org/debian}"
SUITE=trixie
# TENPLEX_TRIXIE_PROFILE=adios2 (bin/lib/adios2-env.sh) builds, checks or names another trixie chroot the
# same way: ADIOS2 2.10 (its C library, tools and Python module) for bench/adios2-read.sh and for
# remaking the ADIOS2 test files (datasets/src/test/adios2/make.sh).
PROFILE="${TENPLEX_TRIXIE_PROFILE:-torch2}"
case "$PROFILE" in
    torch2)
        ROOT="${TENPLEX_TORCH2_ROOT:-/var/cache/tenplex-trixie}"
        # What the suites run under torch 2 import: the client's dependencies, crcmod (CRC32C in C), matplotlib
        # (test_plot.py), pip, venv and setuptools (test_client.py installs the client offline).
        PACKAGES="python3,python3-torch,python3-numpy,python3-requests,python3-crcmod,python3-matplotlib,python3-pip,python3-venv,python3-setuptools" ;;
    adios2)
        ROOT="${TENPLEX_ADIOS2_ROOT:-/var/cache/tenplex-adios2}"
        PACKAGES="python3,python3-numpy,python3-requests,python3-crcmod,python3-adios2,python3-adios2-serial,adios2-serial-bin,libadios2-serial-c-dev,gcc,libc6-dev" ;;
    *) echo "torch2-env: TENPLEX_TRIXIE_PROFILE is torch2 or adios2, not $PROFILE" >&2; exit 2 ;;
esac
STAMP_NAME=.tenplex-torch2-stamp
PATCHES=agent-store-libuv-1 # change when patch_torch changes

stamp() {
    printf 'suite=%s\nmirror=%s\npackages=%s\npatches=%s\n' "$SUITE" "$MIRROR" "$PACKAGES" "$PATCHES"
}

# Debian's torch 2 is built without libuv, so its stores need USE_LIBUV=0 (torch2-python sets it). torch's
# env:// rendezvous passes USE_LIBUV on to the TCPStore it makes, except when the launcher hosts the store
# (TORCHELASTIC_USE_AGENT_STORE=True, as torchrun and tenplex.launch set): there it asks for libuv and
# fails. This passes it there too; the build fails when that code has moved.
patch_torch() {
    /usr/bin/python3 - "$1/usr/lib/python3/dist-packages/torch/distributed/rendezvous.py" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
old = "            is_master=False,\n            timeout=timeout,\n        )"
new = "            is_master=False,\n            timeout=timeout,\n            use_libuv=use_libuv,\n        )"
if text.count(old) != 1:
    sys.exit("torch2-env: %s no longer has the agent-store TCPStore call to patch" % path)
open(path, "w").write(text.replace(old, new))
PY
}

current() {
    [ -f "$ROOT/$STAMP_NAME" ] && [ "$(cat "$ROOT/$STAMP_NAME")" = "$(stamp)" ] && [ -x "$ROOT/usr/bin/python3" ]
}

# Unmounts whatever is mounted under $1 (deepest first); fails when something stays mounted.
unmount_under() {
    local dir
    dir="$(realpath -m "$1")"
    awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
        umount -l "$m" || true
    done
    if awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { found = 1 } END { exit !found }' /proc/mounts; then
        echo "torch2-env: mounts remain under $dir; not removing it" >&2
        return 1
    fi
}

# Removes a chroot directory, never crossing into a mounted file system.
remove_tree() {
    [ -e "$1" ] || return 0
    unmount_under "$1"
    rm -rf --one-file-system -- "$1"
}

TMP=""
BUILDER=""
# Ends a debootstrap still running (its whole session) and removes an unfinished build (on any exit
# before the rename).
discard_tmp() {
    if [ -n "$BUILDER" ]; then
        kill -TERM -- -"$BUILDER" 2>/dev/null || true
        wait "$BUILDER" 2>/dev/null || true
    fi
    if [ -n "$TMP" ] && [ -e "$TMP" ]; then
        remove_tree "$TMP"
    fi
}

build() {
    if current; then
        echo "torch2-env: $ROOT is current (cached)"
        return 0
    fi
    command -v debootstrap >/dev/null || { echo "torch2-env: debootstrap is not installed (apt-get install debootstrap)" >&2; return 1; }
    local parent base started
    parent="$(dirname "$ROOT")"
    base="$(basename "$ROOT")"
    mkdir -p "$parent"
    exec 9>"$parent/.$base.lock"
    flock 9
    if current; then # another build finished while this one waited
        echo "torch2-env: $ROOT is current (built meanwhile)"
        return 0
    fi
    for stale in "$parent/.$base.tmp."* "$parent/.$base.old."*; do # what an interrupted build left
        [ -e "$stale" ] && remove_tree "$stale"
    done
    TMP="$parent/.$base.tmp.$$"
    local old="$parent/.$base.old.$$"
    trap discard_tmp EXIT
    trap 'exit 130' INT TERM
    started=$(date +%s)
    echo "torch2-env: building $SUITE into $ROOT from $MIRROR ($PACKAGES)"
    # in the background and waited for, so that a signal ends the build now (not when debootstrap is done)
    setsid debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$TMP" "$MIRROR" >"$parent/.$base.log" 2>&1 &
    BUILDER=$!
    if ! wait "$BUILDER"; then
        BUILDER=""
        tail -n 30 "$parent/.$base.log" >&2
        echo "torch2-env: debootstrap failed (full log: $parent/.$base.log)" >&2
        return 1
    fi
    BUILDER=""
    unmount_under "$TMP"
    rm -f -- "$TMP/var/cache/apt/archives/"*.deb
    cp /etc/hosts "$TMP/etc/hosts"
    if [ "$PROFILE" = torch2 ]; then
        patch_torch "$TMP"
    fi
    stamp >"$TMP/$STAMP_NAME"
    if [ -e "$ROOT" ]; then
        mv -T "$ROOT" "$old"
    fi
    mv -T "$TMP" "$ROOT"
    TMP=""
    remove_tree "$old"
    echo "torch2-env: built $ROOT in $(( $(date +%s) - started )) s ($(du -sh --one-file-system "$ROOT" | cut -f1))"
}

case "${1:-}" in
    build) build ;;
    check)
        if current; then
            echo "torch2-env: $ROOT is current"
        else
            echo "torch2-env: no current $PROFILE environment at $ROOT (build it: bin/lib/$([ "$PROFILE" = torch2 ] && echo torch2 || echo adios2)-env.sh build, as root)" >&2
            exit 1
        fi
        ;;
    path) echo "$ROOT" ;;
    *)
        echo "usage: $0 build|check|path" >&2
        exit 2
        ;;
esac
