#!/usr/bin/env bash
# tests/config/run.sh: `terrarium-api config dump` against docs/config.md, through the binary.
#   - the keys the dump prints (section by section) are exactly the keys docs/config.md lists
#     (the HTTP backends' sections as `[BACKEND] KEY`);
#   - the database password (from the file or TERRARIUM_DB_PASSWORD) is never printed;
#   - a dump loads back into the same configuration (dump of the dump is the same text);
#   - a bad value exits non-zero with an error naming the section and key.
# Usage: tests/config/run.sh [BUILD_DIR]   (default build; needs BUILD_DIR/terrarium-api)
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib-check.sh
API=${1:-${BUILD_DIR:-build}}/terrarium-api
need_built "$API"
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT

# "SECTION KEY" per key of an INI text on stdin; the sections named in $1 become BACKEND
ini_keys() {
	awk -v http="$1" 'BEGIN { n = split(http, h, " "); for (i = 1; i <= n; i++) H[h[i]] = 1 }
		/^\[/ { s = substr($0, 2, length($0) - 2); if (s in H) s = "BACKEND"; next }
		/^[a-z0-9_]+ = / { print s, $1 }' | sort -u
}

printf '[database]\npassword = file-secret-1\n' >"$T/a.ini"
if "$API" -c "$T/a.ini" config dump >"$T/dump" 2>"$T/err"; then
	ok "config dump exits 0"
else
	not_ok "config dump exits 0: $(cat "$T/err")"
fi
sed -n 's/^| `\[\([A-Za-z0-9_]*\)\] \([a-z0-9_]*\)` |.*/\1 \2/p' docs/config.md | sort -u >"$T/doc.keys"
# the HTTP backends' sections: those of the dump that docs/config.md has no rows of (it lists
# their keys once, as [BACKEND] KEY)
HTTP=$(sed -n 's/^\[\([a-z0-9_]*\)\]$/\1/p' "$T/dump" | grep -vxF -f <(cut -d' ' -f1 "$T/doc.keys") |
	tr '\n' ' ')
check "the dump has HTTP backend sections ($HTTP)" test -n "$HTTP"
for s in $HTTP; do
	check "docs/config.md names the [$s] section" grep -qF "\`[$s]\`" docs/config.md
done
ini_keys "$HTTP" <"$T/dump" >"$T/dump.keys"
check "config dump prints keys ($(wc -l <"$T/dump.keys"))" test "$(wc -l <"$T/dump.keys")" -gt 30
if diff "$T/dump.keys" "$T/doc.keys" >"$T/diff"; then
	ok "docs/config.md lists exactly the keys config dump prints"
else
	not_ok "docs/config.md and config dump differ (< dump, > docs): $(tr '\n' ' ' <"$T/diff")"
fi
check "the password from the file is masked" \
	bash -c "! grep -q file-secret-1 '$T/dump' && grep -qx 'password = \*\*\*\*\*\*\*\*' '$T/dump'"
TERRARIUM_DB_PASSWORD=env-secret-2 "$API" -c "$T/a.ini" config dump >"$T/dump2" 2>&1
check "the password from TERRARIUM_DB_PASSWORD is masked" \
	bash -c "! grep -q 'env-secret-2\|file-secret-1' '$T/dump2'"

printf '[api]\nworkers = 5\nsocket_mode = 0600\n[docker]\nsocket = /run/x.sock\n[log]\nlevel = warn\n' \
	>"$T/b.ini"
"$API" -c "$T/b.ini" config dump >"$T/b1" 2>&1
"$API" -c "$T/b1" config dump >"$T/b2" 2>&1
check "a dump loads back into the same configuration" cmp -s "$T/b1" "$T/b2"
check "the dump shows the file's values" grep -qx "socket_mode = 0600" "$T/b1"

printf '[reconciler]\nlease_seconds = 0\n' >"$T/c.ini"
out=$("$API" -c "$T/c.ini" config dump 2>&1)
rc=$?
check "an out-of-range value fails naming section and key ($out)" \
	test "$rc" -ne 0 -a "${out#*reconciler.lease_seconds: out of range 1..86400}" != "$out"
check_summary
