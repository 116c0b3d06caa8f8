#!/usr/bin/env bash
# tests/mcp/run.sh: the runner's MCP client (runner/mcp.c) against a real MCP server on the
# official TypeScript SDK (tests/mcp/server.mjs, its locked dependencies installed here with
# npm ci; started on a loopback port and stopped by PID), through BUILD_DIR/test_mcp_client
# (tests/mcp/test_mcp_client.c, cmocka). Part of `make unit`.
# Usage: tests/mcp/run.sh [BUILD_DIR]   (default build)
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib-check.sh
. tests/lib-server.sh
. tests/lib-npm.sh
BIN=${1:-${BUILD_DIR:-build}}/test_mcp_client
need_built "$BIN"

if ! npm_locked tests/mcp; then
	not_ok "npm ci in tests/mcp"
	check_exit 1
fi

server_scratch
T=$SERVER_DIR

TOKEN="mcp-test-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
serve "the MCP server" "$T/server.log" "$T/port" node tests/mcp/server.mjs --token "$TOKEN" \
	--port-file "$T/port"

check "the MCP client against the SDK's server ($BIN)" \
	env MCP_TEST_URL="$SERVER_URL" MCP_TEST_TOKEN="$TOKEN" "$BIN"
served "the MCP server" "$T/server.log"
check_exit 0
