# terrarium: `make` builds, `make up` runs the stack, `make test` runs every test.
CC ?= cc
BUILD ?= build
CPPFLAGS += -D_GNU_SOURCE -I. $(shell mariadb_config --include 2>/dev/null || pkg-config --cflags libmariadb)
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -Wall -Wextra -Wformat=2 -Wstrict-prototypes -Wvla -Wwrite-strings -Werror \
	-fno-strict-aliasing -MMD -MP
LDLIBS_DB := $(shell mariadb_config --libs 2>/dev/null || pkg-config --libs libmariadb)
# what a program linking common/crypto.c links with (libsodium: hashing, MACs, random ids,
# and the vault's secretbox, common/vault_crypto.c, docs/vaults.md)
LDLIBS_CRYPTO := -lsodium
# CONFIG_DEFAULT_PATH=/etc/terrarium/terrarium.ini: the configuration read without -c or
# $$TERRARIUM_CONFIG (common/config.h; the Debian package's build sets it, debian/rules)
ifdef CONFIG_DEFAULT_PATH
CPPFLAGS += -DCONFIG_DEFAULT_PATH='"$(CONFIG_DEFAULT_PATH)"'
endif

COMMON_SRC := common/config.c common/log.c common/crypto.c common/backend.c common/clock.c \
	common/egress.c common/packages.c common/redact.c common/privs.c common/strbuf.c \
	common/startup.c common/hostaddr.c
DB_SRC := db/db.c db/keys.c db/migrate.c db/environments.c db/agents.c db/sessions.c db/idempotency.c \
	db/work.c db/intent_state.c db/events.c db/vaults.c
# what links db/vaults.c also links the sealing it opens credentials with
VAULT_SRC := common/vault_crypto.c
HTTP_SRC := http/request.c http/response.c http/router.c
HANDLER_SRC := handlers/verr.c handlers/worker.c handlers/common.c handlers/auth.c handlers/auth_guard.c \
	handlers/env_validate.c handlers/cursor.c handlers/dispatch.c handlers/routes.c \
	handlers/resource.c \
	handlers/sessions.c handlers/idempotency.c \
	handlers/environments.c handlers/agent_validate.c handlers/agents.c handlers/work.c \
	handlers/event_validate.c handlers/events.c handlers/stream.c handlers/vaults.c
FCGI_SRC := fcgi/serve.c
API_SRC := api/main.c api/tail.c $(FCGI_SRC) $(HTTP_SRC) $(HANDLER_SRC) $(DB_SRC) $(COMMON_SRC) \
	$(VAULT_SRC)
# The sandbox library (sandbox/, docs/design.md Backends): the backend drivers and the one call
# the reconciler and the runner make into a sandbox: create or attach, run, egress, teardown.
# Built as build/libterrarium-sandbox.a; of it only sandbox/ includes curl/curl.h.
SANDBOX_SRC := sandbox/call.c sandbox/open.c sandbox/process.c sandbox/dir.c sandbox/local.c \
	sandbox/bwrap.c sandbox/bwrap_view.c
# HTTP drivers (libcurl), E2B (also registered as cube) and Daytona; quote.c: argv -> command line;
# transfer.c: what every libcurl client shares (header lists, a multi handle's steps)
SANDBOX_SRC += sandbox/http.c sandbox/remote.c sandbox/opensandbox.c sandbox/docker.c \
	sandbox/e2b.c sandbox/daytona.c sandbox/quote.c sandbox/transfer.c
# sandbox-runtime (srt: bubblewrap + allowlisting proxies), installed into sandbox-runtime/
SANDBOX_SRC += sandbox/srt.c sandbox/srt_hosts.c
RECON_SRC := reconciler/main.c reconciler/metrics.c reconciler/provision.c reconciler/cache.c \
	reconciler/drift.c db/sandboxes.c db/db.c db/keys.c db/intents.c db/intent_state.c \
	db/idempotency.c db/events.c $(COMMON_SRC)
# the runner's parts the unit tests link alone: the model client (runner/model.c: libcurl,
# runner/ may include curl/curl.h) and its answer reader, the agent toolset (runner/tools.c)
MODEL_SRC := runner/model.c runner/model_stream.c runner/sse.c runner/http_header.c \
	sandbox/transfer.c
TOOLS_SRC := runner/tools.c
# the MCP client (runner/mcp.c, libcurl), its answer reader and what the model is offered of MCP
# tools (docs/runner.md "MCP servers")
MCP_SRC := runner/mcp.c runner/mcp_answer.c runner/mcp_tools.c runner/sse.c \
	runner/http_header.c sandbox/transfer.c

# the runner (docs/runner.md): its claim loop and turns, the model client, the agent toolset and
# the MCP client, the turns' claims (db/turns.c), and the reconciler's objects but its main (a
# turn provisions its session's sandbox through the same step machine)
RUNNER_SRC := $(sort runner/main.c runner/turn.c runner/history.c runner/sandbox.c $(MODEL_SRC) \
	$(TOOLS_SRC) $(MCP_SRC) db/turns.c db/sessions.c db/work.c db/vaults.c $(VAULT_SRC) \
	$(filter-out reconciler/main.c,$(RECON_SRC)))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

API_BIN := $(BUILD)/terrarium-api
RECON_BIN := $(BUILD)/terrarium-reconciler
TURN_BIN := $(BUILD)/terrarium-runner
SANDBOX_LIB := $(BUILD)/libterrarium-sandbox.a
# what a program linking the sandbox library links with (after it: it needs common/'s objects)
SANDBOX_LIBS := -lcurl -lseccomp -ljansson
# what a program linking the reconciler's objects links with
RECON_LIBS := $(SANDBOX_LIB) $(SANDBOX_LIBS) -linih $(LDLIBS_DB) $(LDLIBS_CRYPTO)
E2E_RUNNER_BIN := $(BUILD)/e2e-runner

UNIT_TESTS := $(BUILD)/test_env_validate $(BUILD)/test_core $(BUILD)/test_egress \
	$(BUILD)/test_agent_validate $(BUILD)/test_reconciler

# an LD_PRELOAD shim of tests/faults/run.sh (its own flags: it must load into the sanitizer
# builds' binaries too)
SWAP_SO := $(BUILD)/socket_swap.so

all: $(API_BIN) $(RECON_BIN) $(TURN_BIN) $(E2E_RUNNER_BIN) $(SWAP_SO)

$(SWAP_SO): tests/faults/socket_swap.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC -shared -o $@ $< -ldl

$(API_BIN): $(call obj,$(API_SRC))
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lfcgi -ljansson -linih $(LDLIBS_DB) $(LDLIBS_CRYPTO)

$(SANDBOX_LIB): $(call obj,$(SANDBOX_SRC))
	$(AR) rcs $@ $^

$(RECON_BIN): $(call obj,$(RECON_SRC)) $(SANDBOX_LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(call obj,$(RECON_SRC)) $(RECON_LIBS)

$(TURN_BIN): $(call obj,$(RUNNER_SRC)) $(SANDBOX_LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(call obj,$(RUNNER_SRC)) $(RECON_LIBS)

$(E2E_RUNNER_BIN): $(call obj,tests/e2e/runner.c common/clock.c common/strbuf.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcurl -ljansson

$(BUILD)/test_env_validate: $(call obj,tests/unit/test_env_validate.c handlers/env_validate.c \
	handlers/verr.c common/backend.c common/packages.c tests/unit/unit_json.c tests/unit/unit.c \
	tests/unit/unit_verr.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka

# the API policy (handlers/dispatch.c) over a fake route table: tests/unit/stubs.c
$(BUILD)/test_core: $(call obj,tests/unit/test_core.c $(HTTP_SRC) handlers/dispatch.c \
	handlers/cursor.c db/db.c $(COMMON_SRC)) $(BUILD)/obj/tests/unit/stubs.o
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka -linih $(LDLIBS_DB) $(LDLIBS_CRYPTO)

$(BUILD)/test_egress: $(call obj,tests/unit/test_egress.c common/egress.c common/packages.c \
	tests/unit/unit.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka

$(BUILD)/test_agent_validate: $(call obj,tests/unit/test_agent_validate.c \
	handlers/agent_validate.c handlers/env_validate.c handlers/verr.c common/backend.c \
	common/packages.c common/clock.c tests/unit/unit_json.c tests/unit/unit.c \
	tests/unit/unit_verr.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka

# the reconciler's objects but main.c: provision.c links against db/ (no database is contacted)
$(BUILD)/test_reconciler: $(call obj,tests/unit/test_reconciler.c \
	$(filter-out reconciler/main.c,$(RECON_SRC))) $(SANDBOX_LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) -lcmocka $(RECON_LIBS)

# unit_test,MODULE,SOURCES[,LIBS]: build/test_MODULE from tests/unit/test_MODULE.c and
# SOURCES, one of UNIT_TESTS
define unit_test
$(BUILD)/test_$(1): $$(call obj,tests/unit/test_$(1).c $(2))
	$$(CC) $$(CFLAGS) $$(LDFLAGS) -o $$@ $$^ -lcmocka $(3)
UNIT_TESTS += $(BUILD)/test_$(1)
endef

# running a command (sandbox/process.c): a job left behind does not hold it
$(eval $(call unit_test,process,sandbox/process.c common/clock.c))

# configuration table, config dump, docs/config.md against the table (common/config.c)
$(eval $(call unit_test,config,common/config.c common/backend.c,-linih))
# the runner's history rebuilt from a session's events (runner/history.c)
$(eval $(call unit_test,history,runner/history.c runner/mcp_tools.c common/crypto.c common/strbuf.c tests/unit/unit.c,-ljansson $(LDLIBS_CRYPTO)))
# what a program does at start: its configuration, its stop signals, its lease owner's name
# (common/startup.c)
$(eval $(call unit_test,startup,common/startup.c common/config.c common/backend.c common/crypto.c \
	common/log.c,-linih $(LDLIBS_CRYPTO)))
# the growable buffer (common/strbuf.c)
$(eval $(call unit_test,strbuf,common/strbuf.c))
# base64 (strict for cursors, lenient for protojson bytes) and the stored values (key hashes,
# request hashes, MACs) made before libsodium (common/crypto.c)
$(eval $(call unit_test,crypto,common/crypto.c,$(LDLIBS_CRYPTO)))
# intent states: the enum's name table and the states db/'s SQL spells (db/intent_state.c)
$(eval $(call unit_test,intent_state,db/intent_state.c))
# the reconciler's metrics file as a struct: totals read, added to, written whole
# (reconciler/metrics.c)
$(eval $(call unit_test,metrics,reconciler/metrics.c))
# the vault's sealing: round trip, tampering, wrong key, key files (common/vault_crypto.c)
$(eval $(call unit_test,vault_crypto,$(VAULT_SRC) common/crypto.c tests/unit/unit.c,\
	$(LDLIBS_CRYPTO)))
# timestamps, the monotonic clock and sleeping (common/clock.c)
$(eval $(call unit_test,clock,common/clock.c))
# the package-manager table: install argv, spec rules, registries (common/packages.c)
$(eval $(call unit_test,packages,common/packages.c tests/unit/unit.c,-ljansson))
# the srt backend's allowlist as srt's allowedDomains (sandbox/srt_hosts.c)
$(eval $(call unit_test,srt_hosts,sandbox/srt_hosts.c common/hostaddr.c common/log.c \
	tests/unit/unit_json.c tests/unit/unit.c,-ljansson))

# the model client's reader of Messages API answers, on recorded streams cut at every byte
# (runner/model_stream.c), and the client's request (runner/model.c)
$(eval $(call unit_test,model,$(MODEL_SRC) common/strbuf.c common/clock.c,-ljansson -lcurl))

# the model client against the scripted fake model: run by tests/fake-model/run.sh (make unit),
# which starts the fake
$(BUILD)/test_model_fake: $(call obj,tests/fake-model/test_fake_model.c $(MODEL_SRC) \
	common/strbuf.c common/clock.c tests/unit/unit_http.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcmocka -ljansson -lcurl

# the MCP client's reader of answers, on recorded answers cut at every byte, the names the model
# is offered and the results it gets (runner/mcp_answer.c, runner/mcp_tools.c)
MCP_LIB_SRC := $(MCP_SRC) common/crypto.c common/strbuf.c common/clock.c common/hostaddr.c
$(eval $(call unit_test,mcp,$(MCP_LIB_SRC) tests/unit/unit.c,-ljansson -lcurl $(LDLIBS_CRYPTO)))

# the MCP client against a real MCP server on the official TypeScript SDK: run by
# tests/mcp/run.sh (make unit), which starts the server
$(BUILD)/test_mcp_client: $(call obj,tests/mcp/test_mcp_client.c $(MCP_LIB_SRC) \
	tests/unit/unit_http.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcmocka -ljansson -lcurl $(LDLIBS_CRYPTO)

# package cache keys and the session environment (reconciler/cache.c, provision.c)
$(BUILD)/test_cache: $(call obj,tests/unit/test_cache.c \
	$(filter-out reconciler/main.c,$(RECON_SRC))) $(SANDBOX_LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) -lcmocka $(RECON_LIBS)
UNIT_TESTS += $(BUILD)/test_cache

# http/router.c with a two-line table of its own (no handlers)
$(BUILD)/test_router: $(call obj,tests/unit/test_router.c $(HTTP_SRC) common/crypto.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka $(LDLIBS_CRYPTO)
UNIT_TESTS += $(BUILD)/test_router

# the handlers without the route table, and what they link with, for tests that wrap their
# database calls
HANDLER_TEST_SRC = $(HTTP_SRC) $(filter-out handlers/routes.c handlers/dispatch.c,$(HANDLER_SRC)) \
	$(DB_SRC) $(COMMON_SRC) $(VAULT_SRC)
HANDLER_TEST_LIBS = -ljansson -lcmocka -linih $(LDLIBS_DB) $(LDLIBS_CRYPTO)

# the resource table's generic handlers (handlers/resource.c) over a resource of the test's own:
# its db operations are in memory; db_tx runs its function once, rows are the test's own
$(BUILD)/test_resource: $(call obj,tests/unit/test_resource.c $(HANDLER_TEST_SRC))
	$(CC) $(CFLAGS) $(LDFLAGS) -Wl,--wrap=db_tx,--wrap=db_rows_free -o $@ $^ \
		$(HANDLER_TEST_LIBS)
UNIT_TESTS += $(BUILD)/test_resource

# a send (handlers/events.c) over a session of the test's own: the event log's and the work
# queue's writes are wrapped, its reads answer one tool use; db_tx runs its function again for
# the retries a test asks for
$(BUILD)/test_events: $(call obj,tests/unit/test_events.c $(HANDLER_TEST_SRC))
	$(CC) $(CFLAGS) $(LDFLAGS) -Wl,--wrap=db_tx,--wrap=evdb_lock,--wrap=evdb_append \
		-Wl,--wrap=evdb_status,--wrap=evdb_save,--wrap=workdb_requeue,--wrap=workdb_wake \
		-Wl,--wrap=db_exec,--wrap=db_rows_free -o $@ $^ $(HANDLER_TEST_LIBS)
UNIT_TESTS += $(BUILD)/test_events

# every kind of credential (handlers/auth.c): its lookups wrapped by a table of known keys
$(BUILD)/test_auth: $(call obj,tests/unit/test_auth.c handlers/auth.c handlers/auth_guard.c \
	handlers/common.c handlers/cursor.c handlers/agent_validate.c handlers/env_validate.c \
	handlers/verr.c $(HTTP_SRC) \
	db/db.c db/keys.c db/work.c $(COMMON_SRC))
	$(CC) $(CFLAGS) $(LDFLAGS) \
		-Wl,--wrap=keys_lookup,--wrap=envkeys_lookup,--wrap=worktoken_lookup -o $@ $^ \
		-ljansson -lcmocka -linih $(LDLIBS_DB) $(LDLIBS_CRYPTO)
UNIT_TESTS += $(BUILD)/test_auth

# db/db.c without a server: error classes and the failure a handle reports
$(BUILD)/test_db: $(call obj,tests/unit/test_db.c db/db.c common/crypto.c common/log.c \
	common/config.c common/backend.c common/clock.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka -linih $(LDLIBS_DB) $(LDLIBS_CRYPTO)
UNIT_TESTS += $(BUILD)/test_db

# the unknown-key guard's shared budget, raced by forked processes (handlers/auth_guard.c)
$(BUILD)/test_auth_guard: $(call obj,tests/unit/test_auth_guard.c handlers/auth_guard.c \
	common/crypto.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcmocka $(LDLIBS_CRYPTO)
UNIT_TESTS += $(BUILD)/test_auth_guard

# The driver suites of tests/backends/run.sh: build/test_NAME from tests/backends/NAME.c,
# tests/backends/check.c and the sandbox library, no database. conformance: the backend
# conformance suite; remote_extra: e2b/cube/daytona driver checks past the conformance suite.
DRIVER_TEST_BINS := $(BUILD)/test_conformance $(BUILD)/test_remote_extra
$(DRIVER_TEST_BINS): $(BUILD)/test_%: $(BUILD)/obj/tests/backends/%.o \
	$(call obj,tests/backends/check.c $(COMMON_SRC)) $(SANDBOX_LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(SANDBOX_LIB) $(SANDBOX_LIBS) -linih $(LDLIBS_CRYPTO)
all: $(DRIVER_TEST_BINS)

# HTTP driver helpers: shell quoting (against /bin/sh), output tail, HTTP client errors
$(BUILD)/test_remote: $(call obj,tests/unit/test_remote.c sandbox/remote.c \
	sandbox/quote.c sandbox/http.c sandbox/transfer.c sandbox/process.c \
	common/redact.c common/clock.c common/strbuf.c tests/unit/unit.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka -lcurl
UNIT_TESTS += $(BUILD)/test_remote

# the agent toolset through a sandbox's commands (runner/tools.c), bound to plain processes
$(eval $(call unit_test,tools,$(TOOLS_SRC) common/crypto.c common/strbuf.c \
	tests/unit/unit.c,-ljansson $(LDLIBS_CRYPTO)))

# argv quoting for Daytona's toolbox (checked against /bin/sh and the daemon's tokenizer)
$(BUILD)/test_quote: $(call obj,tests/unit/test_quote.c sandbox/quote.c \
	tests/unit/unit.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcmocka
UNIT_TESTS += $(BUILD)/test_quote

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# the cmocka tests, then `config dump` of the API binary against docs/config.md, then the model
# client against the fake model, then the MCP client against the SDK's MCP server
unit: $(UNIT_TESTS) $(API_BIN) $(BUILD)/test_model_fake $(BUILD)/test_mcp_client
	@set -e; for t in $(UNIT_TESTS); do echo "== $$t"; $$t; done
	@echo "== tests/config/run.sh"; tests/config/run.sh $(BUILD)
	@echo "== tests/fake-model/run.sh"; tests/fake-model/run.sh $(BUILD)
	@echo "== tests/mcp/run.sh"; tests/mcp/run.sh $(BUILD)

# clang-format on every C file, shellcheck on every shell script, node --check on every JS file
# (scripts/lint.sh; .clang-format, .shellcheckrc)
lint:
	scripts/lint.sh

# lint first (it takes seconds), then the unit tests, short fuzz runs (tests/fuzz/), the
# end-to-end suite, the HTTP suite through Apache and lighttpd (test-servers), provisioning on a
# real Docker Engine (tests/docker/, once). The same unit and end-to-end tests under ASan + UBSan
# are `make test-asan` (about 12 minutes more; .ci/run runs it after this), which keeps this
# under 25 minutes.
test: lint all unit
	$(MAKE) fuzz-short
	tests/e2e/run.sh
	tests/servers/run.sh
	tests/docker/run.sh

# ASan + UBSan build of everything, into build-asan/ (`make test-asan` runs the suite against it).
# Every program there also runs LeakSanitizer's check on _exit(), which prefork workers and
# forked children leave by (tests/sanitize/lsan_exit.c); programs linked before that object
# was (re)built are linked again.
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	-MMD -MP
ASAN_EXIT_OBJ := build-asan/obj/tests/sanitize/lsan_exit.o
asan:
	$(MAKE) BUILD=build-asan CFLAGS="$(ASAN_CFLAGS)" $(ASAN_EXIT_OBJ)
	find build-asan -maxdepth 1 -type f ! -newer $(ASAN_EXIT_OBJ) -delete
	$(MAKE) BUILD=build-asan CFLAGS="$(ASAN_CFLAGS)" \
		LDFLAGS="-fsanitize=address,undefined -Wl,--wrap=_exit $(ASAN_EXIT_OBJ)" \
		all $(patsubst $(BUILD)/%,build-asan/%,$(UNIT_TESTS))

# The unit tests, then tests/e2e/run.sh, against the sanitizer build: an error or a leak in any
# of our programs fails (the e2e harness collects the reports under its run directory). The
# reconciler's repeated rounds (kill -9 at random moments, 50-session orphan batches) run fewer
# times here than in the plain pass of `make test`: this pass looks for memory errors on every
# path, which a few rounds reach, and keeps it near 12 minutes. So do the event
# streams' kill -9 load (tests/events/run.sh) and their 1,000 streams' hold.
ASAN_CRASH_ROUNDS ?= 8
ASAN_ORPHAN_SESSIONS ?= 20
ASAN_EVENTS_CRASH_SECONDS ?= 6
ASAN_STREAMS_HOLD_S ?= 5
test-asan: asan
	@set -e; for t in $(patsubst $(BUILD)/%,build-asan/%,$(UNIT_TESTS)); do echo "== $$t"; \
		ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 $$t; done
	BUILD_DIR=build-asan CRASH_ROUNDS=$(ASAN_CRASH_ROUNDS) ORPHAN_SESSIONS=$(ASAN_ORPHAN_SESSIONS) \
		EVENTS_CRASH_SECONDS=$(ASAN_EVENTS_CRASH_SECONDS) STREAMS_HOLD_S=$(ASAN_STREAMS_HOLD_S) \
		tests/e2e/run.sh

# The unit tests under valgrind: any memory error or definite leak fails.
test-valgrind: $(UNIT_TESTS)
	@set -e; for t in $(UNIT_TESTS); do echo "== valgrind $$t"; \
		valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite $$t; \
		done

.PHONY: test-asan test-valgrind

# libFuzzer targets (tests/fuzz/README.md): clang with ASan + UBSan, into $(BUILD)/fuzz/.
# `make fuzz` runs each for FUZZ_SECONDS; `make fuzz-short` (part of test) for FUZZ_SHORT_SECONDS.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SHORT_SECONDS ?= 15
FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer $(FUZZ_SAN) -std=c11 -Wall -Wextra -Wformat=2 \
	-Wstrict-prototypes -Wvla -Wwrite-strings -Werror -fno-strict-aliasing -MMD -MP
FUZZ_BINS := $(addprefix $(BUILD)/fuzz/fuzz_,request cursor env_validate agent_validate redact \
	mcp_answer)
fobj = $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(1))

$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -c -o $@ $<

$(BUILD)/fuzz/fuzz_request: $(call fobj,tests/fuzz/fuzz_request.c tests/unit/stubs.c \
	$(HTTP_SRC) handlers/dispatch.c common/crypto.c)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^ -ljansson $(LDLIBS_CRYPTO)

$(BUILD)/fuzz/fuzz_cursor: $(call fobj,tests/fuzz/fuzz_cursor.c handlers/cursor.c common/crypto.c)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^ $(LDLIBS_CRYPTO)

$(BUILD)/fuzz/fuzz_env_validate: $(call fobj,tests/fuzz/fuzz_env_validate.c \
	handlers/env_validate.c handlers/verr.c common/backend.c common/egress.c common/packages.c)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^ -ljansson

$(BUILD)/fuzz/fuzz_agent_validate: $(call fobj,tests/fuzz/fuzz_agent_validate.c \
	handlers/agent_validate.c handlers/env_validate.c handlers/verr.c common/egress.c \
	common/packages.c common/clock.c)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^ -ljansson

$(BUILD)/fuzz/fuzz_redact: $(call fobj,tests/fuzz/fuzz_redact.c common/redact.c)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^

# what the MCP client reads from a server and makes of a result (no network: no mcp.c)
$(BUILD)/fuzz/fuzz_mcp_answer: $(call fobj,tests/fuzz/fuzz_mcp_answer.c runner/mcp_answer.c \
	runner/mcp_tools.c runner/sse.c runner/http_header.c common/strbuf.c common/crypto.c)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^ -ljansson $(LDLIBS_CRYPTO)

fuzz: $(FUZZ_BINS)
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BINS)

fuzz-short: $(FUZZ_BINS)
	tests/fuzz/run.sh $(FUZZ_SHORT_SECONDS) $(FUZZ_BINS)

.PHONY: fuzz fuzz-short

# Reference responders for `make bench` (bench/ref.h): bare libfcgi + MariaDB statements.
BENCH_BINS := $(BUILD)/bench-ref-select $(BUILD)/bench-ref-insert

$(BUILD)/bench-ref-select: $(call obj,bench/ref-select.c bench/ref.c common/clock.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lfcgi $(LDLIBS_DB)

$(BUILD)/bench-ref-insert: $(call obj,bench/ref-insert.c bench/ref.c common/crypto.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lfcgi $(LDLIBS_DB) $(LDLIBS_CRYPTO)

# Benchmarks against the references, then the reconciler's (scripts/bench.sh); not part of test.
bench: all $(BENCH_BINS)
	scripts/bench.sh

# The HTTP cases and the SDK suite through Apache (mod_fcgid) and lighttpd (mod_fastcgi), and the
# shared-hosting .htaccess setup (tests/servers/run.sh, docs/hosting.md); part of test.
test-servers: all
	tests/servers/run.sh

# terrarium_<version>_<arch>.deb at the top of the tree: dpkg-buildpackage + lintian on a copy
# of the tracked files (scripts/build-deb.sh, debian/, docs/hosting.md); the Debian tools it
# needs are installed first when missing (scripts/install-deps.sh --deb).
deb:
	scripts/build-deb.sh .

# The package in a fresh Debian 12 debootstrap chroot: install, configure, the units' commands,
# the SDK suite through nginx, upgrade with a new migration (tests/deb/run.sh; root; not part of
# test: .ci/run runs it).
test-deb: deb
	tests/deb/run.sh "$$(ls -t terrarium_*.deb | head -n 1)"

.PHONY: test-servers deb test-deb
# Provisioning: create -> ready with and without the package cache, docker and bwrap; docker
# sandboxes per second; --loop claim latency (scripts/bench-provision.sh; not part of test).
bench-provision: all
	scripts/bench-provision.sh

# The docker backend's default sandbox image (sandbox-image/build.sh; cached outside the clone).
sandbox-image:
	sandbox-image/build.sh

up:
	scripts/up.sh

# Three Galera nodes, two API hosts behind one nginx, a reconciler per host, each host a network
# namespace (scripts/cluster.sh, docs/cluster.md); test-cluster runs the HTTP suites and the
# faults against it (not part of test).
cluster-up:
	scripts/cluster.sh up

cluster-down:
	scripts/cluster.sh down

test-cluster: all
	tests/cluster/run.sh

down:
	scripts/down.sh

clean:
	rm -rf build build-asan
	rm -f terrarium_*.deb

.PHONY: all unit lint test asan bench up down clean cluster-up cluster-down test-cluster sandbox-image \
	bench-provision

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
