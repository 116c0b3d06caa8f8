# shellcheck shell=bash
# The `bwrap` backend: bubblewrap namespaces on the host, no fake.
driver_setup() { # DIR: write $CONFIG
	if ! command -v bwrap >/dev/null 2>&1; then
		# shellcheck disable=SC2034 # read by run.sh, which sources this file
		SKIP_REASON="bwrap is not installed"
		return 2
	fi
	driver_config "$1" bwrap sandbox.root="$1/root"
}
