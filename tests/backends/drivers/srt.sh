# shellcheck shell=bash
# The `srt` backend: Anthropic's sandbox-runtime (bubblewrap + allowlisting proxies) on the
# host, no fake. The conformance binary drives the driver without the reconciler, which is what
# gives up root before srt runs (srt as root would keep uid 0 inside), so a root run of the
# suite runs it as SRT_TEST_USER (default www-data, the stack's unprivileged user).
driver_setup() { # DIR: write $CONFIG
	if [ ! -f "$ROOT/sandbox-runtime/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js" ]; then
		# shellcheck disable=SC2034 # read by run.sh, which sources this file
		SKIP_REASON="sandbox-runtime is not installed (scripts/install-deps.sh)"
		return 2
	fi
	driver_config "$1" srt sandbox.root="$1/root"
	if [ "$(id -u)" -eq 0 ]; then
		chown -R "${SRT_TEST_USER:-www-data}:" "$1"
		# shellcheck disable=SC2034 # read by run.sh
		DRIVER_AS=(runuser -u "${SRT_TEST_USER:-www-data}" --)
	fi
}
