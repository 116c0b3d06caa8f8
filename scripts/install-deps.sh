#!/usr/bin/env bash
# Install the Debian packages terrarium needs to build, test and run (Debian 12).
#
# Idempotent: dpkg is asked what is already installed, and `apt-get update` + `apt-get install`
# run only when something is missing. Root runs apt-get directly; anyone else goes through sudo.
#
# mariadb-server, nginx, apache2 and lighttpd are installed for their binaries only: the stack
# runs its own instances (scripts/lib-stack.sh, scripts/lib-servers.sh). While this script
# installs, a policy-rc.d that forbids service starts is put in place (unless one already
# exists) so that no system MariaDB, nginx, Apache or lighttpd is started; services that were
# already running are left alone.
#
# docker.io and debootstrap: the docker backend's Engine and its default sandbox image
# (sandbox-image/build.sh); dockerd is started by scripts/lib-stack.sh, not as a service.
#
# Node.js and npm (for the SDK compatibility tests and the srt backend) are skipped when `node`
# and `npm` already exist, whatever installed them; a `node` older than 18.20 (below) fails the
# script before anything is installed.
#
# apache2, libapache2-mod-fcgid and lighttpd are installed for their binaries as well (make
# test-servers runs its own instances; docs/hosting.md). --deb also installs what `make deb` and
# `make test-deb` need: debhelper, dpkg-dev, fakeroot, lintian, debootstrap, systemd (for
# systemd-analyze: the units are verified, not run).
#
# The srt backend's runtime, @anthropic-ai/sandbox-runtime at the version pinned by
# sandbox-runtime/package-lock.json, is installed with `npm ci` into sandbox-runtime/ (no global
# install) whenever its node_modules is missing or older than the lockfile; it needs bubblewrap,
# socat and ripgrep from Debian (docs/srt.md).
set -euo pipefail

deb_packages=(debhelper dpkg-dev fakeroot lintian debootstrap systemd)
with_deb=0
for arg in "$@"; do
	case "$arg" in
	--deb) with_deb=1 ;;
	*)
		echo "usage: install-deps.sh [--deb]" >&2
		exit 2
		;;
	esac
done

packages=(
	build-essential pkg-config clang
	libfcgi-dev libfcgi-bin libjansson-dev libmariadb-dev libcurl4-openssl-dev libcmocka-dev libinih-dev
	libseccomp-dev
	mariadb-server mariadb-client
	bubblewrap slirp4netns spawn-fcgi wrk curl jq logrotate acl
	apache2 libapache2-mod-fcgid lighttpd
	galera-4 rsync iproute2 iptables # scripts/cluster.sh: Galera nodes, rsync SST, namespaces
	docker.io debootstrap
	socat ripgrep
	libnginx-mod-nchan libnginx-mod-http-headers-more-filter # event streams held by nginx
)
nginx_flavours=(nginx-light nginx nginx-core nginx-full nginx-extras)
policy=/usr/sbin/policy-rc.d

say() { printf 'install-deps: %s\n' "$*" >&2; }

installed() {
	local status
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null) || return 1
	[[ $status == ii* ]]
}

if [ "$(id -u)" -eq 0 ]; then
	sudo=()
elif command -v sudo >/dev/null 2>&1; then
	sudo=(sudo)
else
	sudo=(false)
fi

# sandbox-runtime (srt), installed by install_srt below: its Node.
# sandbox-runtime 0.0.83 declares Node >= 22.12, but runs on Node 18.20 (Debian 12's nodejs,
# which this script installs when node is missing) and 20: tests/srt/run.sh passes on both.
# Older Node cannot load it (its cli.js imports JSON with import attributes, Node 18.20+).
srt_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/sandbox-runtime
SRT_NODE_MIN_MAJOR=18
SRT_NODE_MIN_MINOR=20
srt_node_ok() {
	local v major minor
	v=$(node -p process.versions.node 2>/dev/null) || v=none
	IFS=. read -r major minor _ <<<"$v"
	if [[ $major =~ ^[0-9]+$ && $minor =~ ^[0-9]+$ ]] &&
		{ [ "$major" -gt $SRT_NODE_MIN_MAJOR ] ||
			{ [ "$major" -eq $SRT_NODE_MIN_MAJOR ] && [ "$minor" -ge $SRT_NODE_MIN_MINOR ]; }; }; then
		return 0
	fi
	say "node $v ($(command -v node || echo 'not found')) is older than" \
		"$SRT_NODE_MIN_MAJOR.$SRT_NODE_MIN_MINOR, the oldest Node sandbox-runtime runs on" \
		"(docs/srt.md, Install): put a Node of $SRT_NODE_MIN_MAJOR.$SRT_NODE_MIN_MINOR or later" \
		"first on PATH (Debian 12's nodejs package is 18.20), then run this again"
	return 1
}
# a node too old for sandbox-runtime fails here, before anything is installed; a missing one is
# installed below (Debian 12: 18.20) and checked again by install_srt
if command -v node >/dev/null 2>&1; then
	srt_node_ok || exit 1
fi

[ $with_deb -eq 1 ] && packages+=("${deb_packages[@]}")
missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done

want_nginx=1
for p in "${nginx_flavours[@]}"; do
	if installed "$p"; then
		want_nginx=0
		break
	fi
done

if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
	:
else
	for p in nodejs npm; do
		installed "$p" || missing+=("$p")
	done
fi

# slirp4netns (the network of unrestricted bwrap sandboxes) opens /dev/net/tun as the
# reconciler's unprivileged user; Debian's udev makes it 0666, containers without udev may not.
tun_open() {
	if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
		say "making /dev/net/tun usable by unprivileged users (mode 0666, as udev does)"
		"${sudo[@]}" chmod 0666 /dev/net/tun || true
	fi
}
if [ "${sudo[0]:-}" != false ]; then
	tun_open
fi

# sandbox-runtime (srt): npm ci into the checkout's sandbox-runtime/, as whoever runs this
install_srt() {
	local stamp=$srt_dir/node_modules/.terrarium-lock
	srt_node_ok || return 1
	if [ -f "$stamp" ] && cmp -s "$srt_dir/package-lock.json" "$stamp" &&
		[ -f "$srt_dir/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js" ]; then
		return 0
	fi
	say "npm ci in $srt_dir (sandbox-runtime for the srt backend)"
	(cd "$srt_dir" && npm ci --no-audit --no-fund --loglevel=error) || return 1
	cp "$srt_dir/package-lock.json" "$stamp"
}

if [ ${#missing[@]} -eq 0 ] && [ $want_nginx -eq 0 ]; then
	say "all packages present"
	install_srt
	exit 0
fi

if [ "${sudo[0]:-}" = false ]; then
	say "missing packages: ${missing[*]} $([ $want_nginx -eq 1 ] && echo nginx-light)"
	say "not root and sudo is not available: install them as root"
	exit 1
fi

apt_get=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y
	-o DPkg::Lock::Timeout=300)

made_policy=0
remove_policy() {
	if [ $made_policy -eq 1 ]; then
		"${sudo[@]}" rm -f "$policy"
	fi
}
trap remove_policy EXIT
if [ ! -e "$policy" ]; then
	# exit 101 = "action forbidden": invoke-rc.d and deb-systemd-invoke start nothing.
	"${sudo[@]}" sh -c "printf '#!/bin/sh\nexit 101\n' >'$policy' && chmod 0755 '$policy'"
	made_policy=1
fi

say "apt-get update"
"${apt_get[@]}" update

if [ $want_nginx -eq 1 ]; then
	# nginx-light is Debian 12's small build; later releases only ship "nginx".
	if apt-cache show nginx-light >/dev/null 2>&1; then
		missing+=(nginx-light)
	else
		missing+=(nginx)
	fi
fi

say "installing: ${missing[*]}"
"${apt_get[@]}" install --no-install-recommends "${missing[@]}"

still=()
for p in "${missing[@]}"; do
	installed "$p" || still+=("$p")
done
if [ ${#still[@]} -ne 0 ]; then
	say "still missing after install: ${still[*]}"
	exit 1
fi
install_srt
say "done"
