#!/usr/bin/env bash
# kubectl, with Kustomize built in, for the tests that render deploy/kubernetes (DeployManifestsTest,
# JobSetManifestsTest): Debian trixie's package (kubectl 1.32, Kustomize 5.5; bookworm's is 1.20,
# older than the Kustomize the overlays need), downloaded with the apt of the torch 2 chroot
# (bin/lib/torch2-env.sh, built first) and unpacked into a directory of its own. Its binary needs
# only glibc 2.34, so it runs on the host. Prints the directory that holds kubectl; needs root.
#
# TENPLEX_KUBECTL_DIR names the directory (default /var/cache/tenplex-kubectl).
set -euo pipefail

DIR="${TENPLEX_KUBECTL_DIR:-/var/cache/tenplex-kubectl}"
if [ -x "$DIR/usr/bin/kubectl" ]; then
    echo "$DIR/usr/bin"
    exit 0
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
chroot_dir="$("$here/torch2-env.sh" path)"
"$here/torch2-env.sh" check >&2 || { echo "kubectl-env: build the trixie chroot first (bin/lib/torch2-env.sh build)" >&2; exit 1; }
work=""
tmp=""
trap 'rm -rf -- ${work:+"$work"} ${tmp:+"$tmp"}' EXIT
work="$(mktemp -d "$chroot_dir/tmp/kubectl.XXXXXX")"
chmod 755 "$work" # apt downloads as _apt
mkdir -p "$(dirname "$DIR")"
tmp="$(mktemp -d "$(dirname "$DIR")/.tenplex-kubectl.XXXXXX")"
# the chroot's package lists are as old as the chroot: a newer kubectl may have replaced the one they name
chroot "$chroot_dir" apt-get -qq update >&2
chroot "$chroot_dir" sh -c "cd /tmp/$(basename "$work") && apt-get -qq download kubectl" >&2
deb="$(ls "$work"/kubectl_*.deb)"
dpkg-deb -x "$deb" "$tmp"
"$tmp/usr/bin/kubectl" version --client >&2
rm -rf -- "$DIR"
mv -T "$tmp" "$DIR"
echo "kubectl-env: $(basename "$deb") unpacked into $DIR" >&2
echo "$DIR/usr/bin"
