#!/bin/sh
# Runs inside the image being built (sandbox-image/build.sh), as root, on the default bridge:
# install the package managers from the Debian mirror, add the unprivileged user commands run
# as, and leave no package lists behind (every provisioning runs `apt-get update` itself).
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2046 # one package per word
apt-get install -y --no-install-recommends $(grep -v '^#' /tmp/packages)
useradd --uid 1000 --user-group --home-dir /workspace --no-create-home --shell /bin/bash sandbox
mkdir -p /workspace
chown sandbox:sandbox /workspace
apt-get clean
rm -rf /var/lib/apt/lists/* /tmp/packages /tmp/setup.sh
for m in apt-get cargo gem go npm pip; do
	command -v "$m" >/dev/null || { echo "setup: $m missing after install" >&2; exit 1; }
done
