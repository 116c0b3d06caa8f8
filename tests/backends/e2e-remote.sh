# Sourced by run.sh (part 2, after the OpenSandbox end to end; uses its api, check, start_bg,
# wait_for, fake_log, provisioning, $RECON, $T, $AGENT): the e2b, cube and daytona drivers
# through the API and the reconciler, each against a fresh protocol fake.
#
# The sessions are created through the API instance of the docker backend: its capability row
# is the same as e2b's, cube's and daytona's (packages, apt included; no limited egress), and the
# intent does not name a backend; the reconciler's configuration does. For each backend:
# an unrestricted environment with apt and pip packages -> one `--once` -> ready, the fake saw one
# sandbox under the session's name, created with the network, and both installs; --exec runs in
# it; a failing install -> rescheduling with the cause and without the API key; deleting the
# sessions -> the sandboxes are gone; no protocol violations.

e2e_remote() { # BACKEND FAKE-SCRIPT
	local b=$1 fake=$2
	local dir="$T/e2e-$b" base url env sid env_f sid_f p err log n due rc
	local URL=$TERRARIUM_URL_docker # read by api()
	mkdir -p "$dir"
	printf 'key_%s\n' "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$dir/api.key"
	start_bg "$dir/fake.log" node "$HERE/$fake" --port-file "$dir/port" \
		--api-key-file "$dir/api.key"
	if ! wait_for "$dir/port"; then
		not_ok "e2e $b: the fake started"
		return
	fi
	base="http://127.0.0.1:$(cat "$dir/port")"
	url=$base
	[ "$b" = daytona ] && url=$base/api
	{
		sed -n '/^\[database\]/,/^$/p' "$TERRARIUM_RUN/local.ini"
		printf '[sandbox]\nbackend = %s\n\n' "$b"
		printf '[%s]\nurl = %s\napi_key_file = %s\ntimeout_seconds = 10\n\n' "$b" "$url" \
			"$dir/api.key"
		printf '[reconciler]\nbackoff_base_seconds = 0\n\n[log]\nlevel = info\n'
	} >"$dir/reconciler.ini"

	env=$(api POST /v1/environments "{\"name\":\"backends-e2e-$b\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},\"packages\":{\"apt\":[\"jq\"],\"pip\":[\"requests\"]}}}" | jq -r .id)
	sid=$(api POST /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$env\"}" | jq -r .id)
	check "e2e $b: unrestricted environment with apt + pip, and a session ($env $sid)" \
		bash -c '[[ $1 == env_* && $2 == sesn_* ]]' _ "$env" "$sid"
	"$RECON" -c "$dir/reconciler.ini" --dry-run >"$dir/due.log" 2>&1
	due=$(grep -c '^would ' "$dir/due.log" | tr -d ' ')
	"$RECON" -c "$dir/reconciler.ini" --once >"$dir/once.log" 2>&1
	rc=$?
	if [ "$due" -le 1 ]; then
		check "e2e $b: reconciler --once exits 0" test $rc -eq 0
	else
		echo "note: $((due - 1)) other due intents went through the $b fake; exit status $rc not checked"
	fi
	p=$(provisioning "$sid")
	check "e2e $b: session ready ($p)" test "$(jq -r .p.status <<<"$p")" = ready
	[ "$(jq -r .p.status <<<"$p")" = ready ] || sed 's/^/    /' "$dir/once.log"

	log=$(fake_log "$base/__fake/log")
	# the fakes' records: e2b keeps the name in metadata, daytona in labels
	n=$(jq --arg s "$sid" '[.sandboxes[] | select(.metadata.terrarium_sandbox == $s or .labels.terrarium_sandbox == $s)] | length' <<<"$log")
	check "e2e $b: one sandbox in the fake carries the session's name ($n)" test "$n" = 1
	check "e2e $b: it was created with the network (unrestricted policy)" \
		test "$(jq --arg s "$sid" '[.sandboxes[] | select(.metadata.terrarium_sandbox == $s or .labels.terrarium_sandbox == $s) | (if has("allowInternet") then .allowInternet else (.networkBlockAll | not) end)] == [true]' <<<"$log")" = true
	check "e2e $b: apt-get install jq and pip install requests ran in it" \
		test "$(jq -c --arg s "$sid" '[.sandboxes[] | select(.metadata.terrarium_sandbox == $s or .labels.terrarium_sandbox == $s) | .installed[]]' <<<"$log")" = '["apt-get jq","pip requests"]'
	p=$("$RECON" -c "$dir/reconciler.ini" --exec "$sid" -- echo "hello from" "'the sandbox'" 2>&1)
	check "e2e $b: --exec runs in the bound sandbox ($p)" test "$p" = "hello from 'the sandbox'"

	env_f=$(api POST /v1/environments "{\"name\":\"backends-e2e-$b-failing\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},\"packages\":{\"pip\":[\"fail-pkg\"]}}}" | jq -r .id)
	sid_f=$(api POST /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$env_f\"}" | jq -r .id)
	"$RECON" -c "$dir/reconciler.ini" --once >"$dir/fail.log" 2>&1
	check "e2e $b: a failed install exits non-zero" test $? -ne 0
	p=$(provisioning "$sid_f")
	check "e2e $b: failing session rescheduling ($(jq -c '{s, status: .p.status}' <<<"$p"))" \
		test "$(jq -r '.s + " " + .p.status' <<<"$p")" = "rescheduling failed"
	err=$(jq -r .p.last_error <<<"$p")
	check "e2e $b: last_error names the manager and keeps the output ($err)" \
		bash -c 'grep -q "pip install: exit status 100" <<<"$1" && grep -q "Unable to locate package fail-pkg" <<<"$1"' _ "$err"
	check "e2e $b: the API key is in no last_error and no reconciler log" \
		bash -c '! grep -qF -- "$(cat "$1")" <<<"$2" && ! grep -qF -- "$(cat "$1")" "$3"/*.log' _ "$dir/api.key" "$err" "$dir"

	api DELETE "/v1/sessions/$sid" >/dev/null
	api DELETE "/v1/sessions/$sid_f" >/dev/null
	"$RECON" -c "$dir/reconciler.ini" --once >"$dir/teardown.log" 2>&1
	log=$(fake_log "$base/__fake/log")
	n=$(jq --arg s "$sid" '[.sandboxes[] | select((.metadata.terrarium_sandbox == $s or .labels.terrarium_sandbox == $s) and .state != "destroyed")] | length' <<<"$log")
	check "e2e $b: deleting the session removed its sandbox ($n left)" test "$n" = 0
	n=$(jq -c .violations <<<"$log")
	check "e2e $b: the fake recorded no protocol violations ($n)" test "$n" = "[]"
}

if [ -z "${TERRARIUM_URL_docker:-}" ]; then
	echo "skipped: e2b, cube and daytona end to end (needs TERRARIUM_URL_docker from tests/e2e/run.sh)"
else
	echo "# end to end: backends e2b, cube and daytona through the API and the reconciler"
	e2e_remote e2b fake-e2b.mjs
	e2e_remote cube fake-e2b.mjs
	e2e_remote daytona fake-daytona.mjs
fi
