# The `local` backend: a directory per sandbox under the configured root, no fake.
driver_setup() { # DIR: write $CONFIG
	CONFIG=$1/conformance.ini
	printf '[sandbox]\nbackend = local\nroot = %s\n' "$1/root" >"$CONFIG"
}
