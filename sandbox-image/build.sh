#!/usr/bin/env bash
# `make sandbox-image`: build terrarium's default Docker sandbox image, Debian 12 with the six
# package managers (apt, cargo, gem, go, npm, pip), without any registry: debootstrap from the
# Debian mirror, `docker import`, then sandbox-image/setup.sh run in a container from it, and
# `docker commit`.
#
# The tag is terrarium-sandbox:<first 12 hex digits of the SHA-256 of packages, setup.sh, the
# suite and IMAGE_VERSION>, so a change to what the image holds builds a new one. A built image is saved to CACHE_DIR (outside the clone) and
# loaded from there by an engine that lacks it; an image already in the engine is kept.
#
# Usage: sandbox-image/build.sh [--print-tag]
# Environment: DOCKER_SOCKET (the Engine to use; without it, the one scripts/lib-stack.sh's
# docker_engine finds or starts under RUNDIR, default ./var), CACHE_DIR (default
# /var/cache/terrarium), DEBIAN_MIRROR (default http://deb.debian.org/debian), SUITE (bookworm).
# Prints the tag on stdout; progress on stderr.
set -euo pipefail

DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_DIR=${CACHE_DIR:-/var/cache/terrarium}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=${SUITE:-bookworm}
LABEL=terrarium.managed=true

say() { printf 'sandbox-image: %s\n' "$*" >&2; }

IMAGE_VERSION=1 # bump when a change here changes what the image holds
hash=$( (cd "$DIR" && cat packages setup.sh; echo "$SUITE $IMAGE_VERSION") | sha256sum | cut -c1-12)
TAG=terrarium-sandbox:$hash
if [ "${1:-}" = --print-tag ]; then
	echo "$TAG"
	exit 0
fi
# stdout carries the tag alone: everything else (docker's own output too) goes to stderr
exec 3>&1 1>&2

if [ -n "${DOCKER_SOCKET:-}" ]; then
	SOCKET=$DOCKER_SOCKET
else
	# shellcheck source=scripts/lib-stack.sh
	. "$DIR/../scripts/lib-stack.sh"
	run=${RUNDIR:-$DIR/../var}
	mkdir -p "$run"
	docker_engine "$(cd "$run" && pwd)" || exit 1
	SOCKET=$STACK_DOCKER_SOCKET
fi
docker_() { docker -H "unix://$SOCKET" "$@"; }

if ! docker_ version >/dev/null 2>&1; then
	say "no Docker Engine answers on $SOCKET"
	exit 1
fi
if docker_ image inspect "$TAG" >/dev/null 2>&1; then
	say "$TAG present"
	echo "$TAG" >&3
	exit 0
fi
tarball=$CACHE_DIR/terrarium-sandbox-$hash.tar
if [ -s "$tarball" ]; then
	say "loading $TAG from $tarball"
	if docker_ load -q -i "$tarball" >&2 && docker_ image inspect "$TAG" >/dev/null 2>&1; then
		echo "$TAG" >&3
		exit 0
	fi
	say "$tarball did not hold $TAG: building"
fi

command -v debootstrap >/dev/null || {
	say "debootstrap is missing (scripts/install-deps.sh installs it)"
	exit 1
}
work=$(mktemp -d "${TMPDIR:-/tmp}/terrarium-image.XXXXXX")
builder=terrarium-image-build-$$
cleanup() {
	docker_ rm -f "$builder" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

# the debootstrapped tree is kept too (as a tarball): a change to setup.sh or packages does
# not fetch the base system again
rootfs=$CACHE_DIR/debootstrap-$SUITE-$(echo "$MIRROR" | sha256sum | cut -c1-8).tar
if [ ! -s "$rootfs" ]; then
	say "debootstrap $SUITE from $MIRROR (a few minutes)"
	debootstrap --variant=minbase "$SUITE" "$work/root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
		tail -n 30 "$work/debootstrap.log" >&2
		say "debootstrap failed"
		exit 1
	}
	# the base system's sources point at the mirror it came from
	printf 'deb %s %s main\ndeb %s %s-updates main\n' "$MIRROR" "$SUITE" "$MIRROR" "$SUITE" \
		>"$work/root/etc/apt/sources.list"
	mkdir -p "$CACHE_DIR"
	tar -C "$work/root" -cf "$rootfs.tmp.$$" . && mv -f "$rootfs.tmp.$$" "$rootfs"
	rm -rf "$work/root"
fi
base=terrarium-sandbox-base:$hash
say "docker import -> $base"
docker_ import -c "LABEL $LABEL" "$rootfs" "$base" >/dev/null

say "installing the package managers (setup.sh)"
docker_ create --name "$builder" --label "$LABEL" --network bridge "$base" \
	/bin/sh /tmp/setup.sh >/dev/null
docker_ cp "$DIR/packages" "$builder:/tmp/packages"
docker_ cp "$DIR/setup.sh" "$builder:/tmp/setup.sh"
docker_ start -a "$builder" >&2 || {
	say "setup.sh failed"
	exit 1
}
docker_ commit \
	-c "LABEL $LABEL" \
	-c 'ENV LANG=C.UTF-8' \
	-c 'WORKDIR /workspace' \
	-c 'CMD ["/bin/bash"]' \
	"$builder" "$TAG" >&2
docker_ rm -f "$builder" >/dev/null
docker_ rmi "$base" >/dev/null 2>&1 || true

if mkdir -p "$CACHE_DIR" 2>/dev/null; then
	say "saving $TAG to $tarball"
	docker_ save -o "$tarball.tmp.$$" "$TAG" && mv -f "$tarball.tmp.$$" "$tarball" ||
		rm -f "$tarball.tmp.$$"
fi
say "built $TAG"
echo "$TAG" >&3
