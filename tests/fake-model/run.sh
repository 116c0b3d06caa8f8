#!/usr/bin/env bash
# tests/fake-model/run.sh: the model client (runner/model.c) against the scripted fake of the
# Messages API (fake-model.mjs, started here on a loopback port and stopped by PID), through
# BUILD_DIR/test_model_fake (tests/fake-model/test_fake_model.c, cmocka). Part of `make unit`.
# Usage: tests/fake-model/run.sh [BUILD_DIR]   (default build)
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib-check.sh
. tests/lib-server.sh
BIN=${1:-${BUILD_DIR:-build}}/test_model_fake
need_built "$BIN"
server_scratch
T=$SERVER_DIR

KEY="sk-fake-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
serve "the fake model" "$T/fake.log" "$T/port" node tests/fake-model/fake-model.mjs --key "$KEY" \
	--port-file "$T/port"

check "the model client against the fake ($BIN)" \
	env FAKE_MODEL_URL="$SERVER_URL" FAKE_MODEL_KEY="$KEY" "$BIN"
served "the fake model" "$T/fake.log"
check_exit 0
