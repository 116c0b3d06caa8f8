# The `bwrap` backend: bubblewrap namespaces on the host, no fake.
driver_setup() { # DIR: write $CONFIG
	if ! command -v bwrap >/dev/null 2>&1; then
		SKIP_REASON="bwrap is not installed"
		return 2
	fi
	CONFIG=$1/conformance.ini
	printf '[sandbox]\nbackend = bwrap\nroot = %s\n' "$1/root" >"$CONFIG"
}
