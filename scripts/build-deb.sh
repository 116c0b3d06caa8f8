#!/usr/bin/env bash
# build-deb.sh OUTDIR [VERSION [SQL_FILE...]]: build terrarium_<version>_<arch>.deb with Debian's
# tools (dpkg-buildpackage, debhelper; debian/) from a copy of the working tree's files that git
# tracks or would track (so build output and ignored files stay out), check it with lintian, and
# put the .deb into OUTDIR. VERSION (a test's upgrade build) adds a changelog entry; SQL_FILEs
# are added to sql/ of the copy (a test-only migration). `make deb` runs it with OUTDIR = the
# top of the tree. Installs the Debian tools it needs when they are missing (scripts/install-deps.sh
# --deb; SKIP_INSTALL_DEPS=1 does not). Prints the .deb's path last.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
version=${2:-}
shift $(($# < 2 ? $# : 2))

# what is missing is installed first, as `make up` does (scripts/install-deps.sh --deb; through
# sudo when not root), unless SKIP_INSTALL_DEPS=1
tools=(dpkg-buildpackage dh lintian fakeroot)
missing_tools() {
	local tool
	for tool in "${tools[@]}"; do
		command -v "$tool" >/dev/null || echo "$tool"
	done
}
if [ -n "$(missing_tools)" ] && [ "${SKIP_INSTALL_DEPS:-0}" != 1 ]; then
	echo "build-deb: $(missing_tools | tr '\n' ' ')missing: scripts/install-deps.sh --deb" >&2
	bash "$ROOT/scripts/install-deps.sh" --deb >&2 || exit 1 # stdout ends with the .deb's path
fi
if [ -n "$(missing_tools)" ]; then
	echo "build-deb: $(missing_tools | tr '\n' ' ')missing (scripts/install-deps.sh --deb installs the" \
		"Debian tools of make deb)" >&2
	exit 1
fi

mkdir -p "$ROOT/build"
work=$(mktemp -d "$ROOT/build/deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/terrarium
mkdir -p "$src"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null -T - -cf -) | tar -xf - -C "$src"

if [ -n "$version" ]; then
	{
		printf 'terrarium (%s) unstable; urgency=medium\n\n  * Build %s.\n\n' "$version" "$version"
		printf ' -- terrarium developers <dev@terrarium.invalid>  %s\n\n' "$(date -R)"
		cat "$src/debian/changelog"
	} >"$work/changelog" && mv "$work/changelog" "$src/debian/changelog"
fi
for sqlfile in "$@"; do
	cp "$sqlfile" "$src/sql/"
done

version=$(cd "$src" && dpkg-parsechangelog -S Version)
arch=$(dpkg-architecture -q DEB_HOST_ARCH)
deb=terrarium_${version}_${arch}.deb
echo "build-deb: dpkg-buildpackage in $src (log: $work/build.log)" >&2
if ! (cd "$src" && dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1; then
	tail -n 40 "$work/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed" >&2
	exit 1
fi
# lintian: errors and warnings fail the build; what remains is explained in
# debian/terrarium.lintian-overrides and docs/hosting.md
echo "build-deb: lintian $deb" >&2
if ! lintian --fail-on error,warning --tag-display-limit 0 "$work/$deb" >&2; then
	echo "build-deb: lintian failed" >&2
	exit 1
fi
mv -f "$work/$deb" "$out/$deb"
echo "$out/$deb"
