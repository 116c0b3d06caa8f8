# shellcheck shell=bash
# The `local` backend: a directory per sandbox under the configured root, no fake.
driver_setup() { driver_config "$1" local sandbox.root="$1/root"; }
