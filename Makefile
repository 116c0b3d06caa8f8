# terrarium: `make` builds, `make up` runs the stack, `make test` runs every test.
CC ?= cc
BUILD ?= build
CPPFLAGS += -D_GNU_SOURCE -I. $(shell mariadb_config --include 2>/dev/null || pkg-config --cflags libmariadb)
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -Wall -Wextra -Wformat=2 -Wstrict-prototypes -Wvla -Wwrite-strings -Werror \
	-fno-strict-aliasing -MMD -MP
LDLIBS_DB := $(shell mariadb_config --libs 2>/dev/null || pkg-config --libs libmariadb)
# CONFIG_DEFAULT_PATH=/etc/terrarium/terrarium.ini: the configuration read without -c or
# $$TERRARIUM_CONFIG (common/config.h; the Debian package's build sets it, debian/rules)
ifdef CONFIG_DEFAULT_PATH
CPPFLAGS += -DCONFIG_DEFAULT_PATH='"$(CONFIG_DEFAULT_PATH)"'
endif

COMMON_SRC := common/config.c common/log.c common/crypto.c common/backend.c common/clock.c \
	common/egress.c common/redact.c common/privs.c common/strbuf.c
DB_SRC := db/db.c db/keys.c db/migrate.c db/environments.c db/agents.c db/sessions.c db/idempotency.c \
	db/work.c db/intent.c db/events.c
HTTP_SRC := http/request.c http/response.c http/router.c
HANDLER_SRC := handlers/verr.c handlers/common.c handlers/auth_guard.c handlers/env_validate.c \
	handlers/cursor.c handlers/router.c handlers/routes.c handlers/resource.c \
	handlers/sessions.c handlers/idempotency.c \
	handlers/environments.c handlers/agent_validate.c handlers/agents.c handlers/work.c \
	handlers/event_validate.c handlers/events.c handlers/stream.c
FCGI_SRC := fcgi/serve.c
API_SRC := api/main.c api/tail.c $(FCGI_SRC) $(HTTP_SRC) $(HANDLER_SRC) $(DB_SRC) $(COMMON_SRC)
RECON_SRC := reconciler/main.c reconciler/provision.c reconciler/cache.c reconciler/drift.c \
	db/sandboxes.c reconciler/backends/process.c \
	reconciler/backends/dir.c reconciler/backends/local.c reconciler/backends/bwrap.c \
	reconciler/backends/open.c db/db.c db/keys.c db/intents.c db/intent.c db/idempotency.c \
	db/events.c $(COMMON_SRC)
# HTTP sandbox drivers (libcurl; only reconciler/backends/ includes curl/curl.h)
RECON_SRC += reconciler/backends/http.c reconciler/backends/remote.c \
	reconciler/backends/opensandbox.c reconciler/backends/docker.c
# E2B (also registered as cube) and Daytona drivers; quote.c: argv -> command line
RECON_SRC += reconciler/backends/e2b.c reconciler/backends/daytona.c reconciler/backends/quote.c
# sandbox-runtime (srt: bubblewrap + allowlisting proxies), installed into sandbox-runtime/
RECON_SRC += reconciler/backends/srt.c reconciler/backends/srt_hosts.c

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

API_BIN := $(BUILD)/terrarium-api
RECON_BIN := $(BUILD)/terrarium-reconciler
# what a program linking the reconciler's objects links with
RECON_LIBS := -ljansson -linih -lcurl -lseccomp $(LDLIBS_DB)
RUNNER_BIN := $(BUILD)/e2e-runner

UNIT_TESTS := $(BUILD)/test_env_validate $(BUILD)/test_core $(BUILD)/test_egress \
	$(BUILD)/test_agent_validate $(BUILD)/test_reconciler

all: $(API_BIN) $(RECON_BIN) $(RUNNER_BIN)

$(API_BIN): $(call obj,$(API_SRC))
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lfcgi -ljansson -linih $(LDLIBS_DB)

$(RECON_BIN): $(call obj,$(RECON_SRC))
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(RECON_LIBS)

$(RUNNER_BIN): $(call obj,tests/e2e/runner.c common/clock.c common/strbuf.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcurl -ljansson

$(BUILD)/test_env_validate: $(call obj,tests/unit/test_env_validate.c handlers/env_validate.c \
	handlers/verr.c common/backend.c tests/unit/unit_json.c tests/unit/unit.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka

# the API policy (handlers/router.c) over a fake route table: tests/unit/stubs.c
$(BUILD)/test_core: $(call obj,tests/unit/test_core.c $(HTTP_SRC) handlers/router.c \
	handlers/cursor.c db/db.c $(COMMON_SRC)) $(BUILD)/obj/tests/unit/stubs.o
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka -linih $(LDLIBS_DB)

$(BUILD)/test_egress: $(call obj,tests/unit/test_egress.c common/egress.c tests/unit/unit.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka

$(BUILD)/test_agent_validate: $(call obj,tests/unit/test_agent_validate.c \
	handlers/agent_validate.c handlers/env_validate.c handlers/verr.c common/backend.c \
	common/clock.c tests/unit/unit_json.c tests/unit/unit.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka

# the reconciler's objects but main.c: provision.c links against db/ (no database is contacted)
$(BUILD)/test_reconciler: $(call obj,tests/unit/test_reconciler.c \
	$(filter-out reconciler/main.c,$(RECON_SRC)))
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcmocka $(RECON_LIBS)

# unit_test,MODULE,SOURCES[,LIBS]: build/test_MODULE from tests/unit/test_MODULE.c and
# SOURCES, one of UNIT_TESTS
define unit_test
$(BUILD)/test_$(1): $$(call obj,tests/unit/test_$(1).c $(2))
	$$(CC) $$(CFLAGS) $$(LDFLAGS) -o $$@ $$^ -lcmocka $(3)
UNIT_TESTS += $(BUILD)/test_$(1)
endef

# configuration table, config dump, docs/config.md against the table (common/config.c)
$(eval $(call unit_test,config,common/config.c common/backend.c,-linih))
# the growable buffer (common/strbuf.c)
$(eval $(call unit_test,strbuf,common/strbuf.c))
# base64: one decoder, strict (cursors) and lenient (protojson bytes) (common/crypto.c)
$(eval $(call unit_test,crypto,common/crypto.c))
# intent states: the enum's name table and the states db/'s SQL spells (db/intent.c)
$(eval $(call unit_test,intent,db/intent.c))
# timestamps, the monotonic clock and sleeping (common/clock.c)
$(eval $(call unit_test,clock,common/clock.c))
# the srt backend's allowlist as srt's allowedDomains (reconciler/backends/srt_hosts.c)
$(eval $(call unit_test,srt_hosts,reconciler/backends/srt_hosts.c common/log.c \
	tests/unit/unit_json.c tests/unit/unit.c,-ljansson))

# package cache keys and the session environment (reconciler/cache.c, provision.c)
$(BUILD)/test_cache: $(call obj,tests/unit/test_cache.c \
	$(filter-out reconciler/main.c,$(RECON_SRC)))
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcmocka $(RECON_LIBS)
UNIT_TESTS += $(BUILD)/test_cache

# http/router.c with a two-line table of its own (no handlers)
$(BUILD)/test_router: $(call obj,tests/unit/test_router.c $(HTTP_SRC) common/crypto.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka
UNIT_TESTS += $(BUILD)/test_router

# the resource table's generic handlers (handlers/resource.c) over a resource of the test's own:
# its db operations are in memory; db_tx runs its function once, rows are the test's own
$(BUILD)/test_resource: $(call obj,tests/unit/test_resource.c $(HTTP_SRC) \
	$(filter-out handlers/routes.c handlers/router.c,$(HANDLER_SRC)) $(DB_SRC) $(COMMON_SRC))
	$(CC) $(CFLAGS) $(LDFLAGS) -Wl,--wrap=db_tx,--wrap=db_rows_free -o $@ $^ -ljansson \
		-lcmocka -linih $(LDLIBS_DB)
UNIT_TESTS += $(BUILD)/test_resource

# db/db.c without a server: error classes and the failure a handle reports
$(BUILD)/test_db: $(call obj,tests/unit/test_db.c db/db.c common/crypto.c common/log.c \
	common/config.c common/backend.c common/clock.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka -linih $(LDLIBS_DB)
UNIT_TESTS += $(BUILD)/test_db

# the unknown-key guard's shared budget, raced by forked processes (handlers/auth_guard.c)
$(BUILD)/test_auth_guard: $(call obj,tests/unit/test_auth_guard.c handlers/auth_guard.c \
	common/crypto.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcmocka
UNIT_TESTS += $(BUILD)/test_auth_guard

# The driver suites of tests/backends/run.sh: build/test_NAME from tests/backends/NAME.c,
# tests/backends/check.c and the drivers' objects, no database. conformance: the backend
# conformance suite; remote_extra: e2b/cube/daytona driver checks past the conformance suite.
DRIVER_TEST_BINS := $(BUILD)/test_conformance $(BUILD)/test_remote_extra
$(DRIVER_TEST_BINS): $(BUILD)/test_%: $(BUILD)/obj/tests/backends/%.o \
	$(call obj,tests/backends/check.c $(filter reconciler/backends/%,$(RECON_SRC)) $(COMMON_SRC))
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(RECON_LIBS)
all: $(DRIVER_TEST_BINS)

# HTTP driver helpers: shell quoting (against /bin/sh), output tail, HTTP client errors
$(BUILD)/test_remote: $(call obj,tests/unit/test_remote.c reconciler/backends/remote.c \
	reconciler/backends/quote.c reconciler/backends/http.c reconciler/backends/process.c \
	common/redact.c common/clock.c common/strbuf.c tests/unit/unit.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka -lcurl
UNIT_TESTS += $(BUILD)/test_remote

# argv quoting for Daytona's toolbox (checked against /bin/sh and the daemon's tokenizer)
$(BUILD)/test_quote: $(call obj,tests/unit/test_quote.c reconciler/backends/quote.c \
	tests/unit/unit.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcmocka
UNIT_TESTS += $(BUILD)/test_quote

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# the cmocka tests, then `config dump` of the API binary against docs/config.md
unit: $(UNIT_TESTS) $(API_BIN)
	@set -e; for t in $(UNIT_TESTS); do echo "== $$t"; $$t; done
	@echo "== tests/config/run.sh"; tests/config/run.sh $(BUILD)

# unit tests, short fuzz runs (tests/fuzz/), the end-to-end suite, the HTTP suite through Apache
# and lighttpd (test-servers), provisioning on a real Docker Engine (tests/docker/, once), then
# the unit and end-to-end tests again under ASan + UBSan
# (test-asan)
test: all unit
	$(MAKE) fuzz-short
	tests/e2e/run.sh
	tests/servers/run.sh
	tests/docker/run.sh
	$(MAKE) test-asan

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
# path, which a few rounds reach, and keeps `make test` under 20 minutes. So do the event
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
FUZZ_BINS := $(addprefix $(BUILD)/fuzz/fuzz_,request cursor env_validate agent_validate redact)
fobj = $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(1))

$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -c -o $@ $<

$(BUILD)/fuzz/fuzz_request: $(call fobj,tests/fuzz/fuzz_request.c tests/unit/stubs.c \
	$(HTTP_SRC) handlers/router.c common/crypto.c)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^ -ljansson

$(BUILD)/fuzz/fuzz_cursor: $(call fobj,tests/fuzz/fuzz_cursor.c handlers/cursor.c common/crypto.c)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^

$(BUILD)/fuzz/fuzz_env_validate: $(call fobj,tests/fuzz/fuzz_env_validate.c \
	handlers/env_validate.c handlers/verr.c common/backend.c common/egress.c)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^ -ljansson

$(BUILD)/fuzz/fuzz_agent_validate: $(call fobj,tests/fuzz/fuzz_agent_validate.c \
	handlers/agent_validate.c handlers/env_validate.c handlers/verr.c common/egress.c \
	common/clock.c)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^ -ljansson

$(BUILD)/fuzz/fuzz_redact: $(call fobj,tests/fuzz/fuzz_redact.c common/redact.c)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^

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
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lfcgi $(LDLIBS_DB)

# Benchmarks against the references, then the reconciler's (scripts/bench.sh); not part of test.
bench: all $(BENCH_BINS)
	scripts/bench.sh

# The HTTP cases and the SDK suite through Apache (mod_fcgid) and lighttpd (mod_fastcgi), and the
# shared-hosting .htaccess setup (tests/servers/run.sh, docs/hosting.md); part of test.
test-servers: all
	tests/servers/run.sh

# terrarium_<version>_<arch>.deb at the top of the tree: dpkg-buildpackage + lintian on a copy
# of the tracked files (scripts/build-deb.sh, debian/, docs/hosting.md).
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

.PHONY: all unit test asan bench up down clean cluster-up cluster-down test-cluster sandbox-image \
	bench-provision

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
