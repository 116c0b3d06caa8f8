#!/usr/bin/env bash
# `make lint` (first in `make test`): every file git tracks or would track (not ignored) passes
#   - clang-format --dry-run --Werror: each *.c and *.h (the repository's .clang-format);
#   - shellcheck: each *.sh and each file whose first line is a bash or sh shebang (.ci/run, the
#     Debian maintainer scripts, ...), each on its own (.shellcheckrc: the libraries are checked
#     as files of their own, not followed from the scripts that source them);
#   - node --check: each *.js and *.mjs (syntax).
# The checks run in parallel, one job per core. Prints what fails and a count per tool; exits 1
# when anything fails, 2 when a tool is missing (scripts/install-deps.sh installs them).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

say() { printf 'lint: %s\n' "$*" >&2; }

for tool in git clang-format shellcheck node; do
	command -v "$tool" >/dev/null 2>&1 || {
		say "$tool not found (scripts/install-deps.sh installs it)"
		exit 2
	}
done

JOBS=$(nproc 2>/dev/null || echo 2)
c_files=() sh_files=() js_files=()
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue # tracked, deleted in the working tree
	case "$f" in
	*.c | *.h) c_files+=("$f") ;;
	*.js | *.mjs) js_files+=("$f") ;;
	*.sh) sh_files+=("$f") ;;
	*)
		IFS= read -r first <"$f" 2>/dev/null || first=""
		[[ $first =~ ^'#!'.*(/|env[[:space:]]+)(ba)?sh([[:space:]]|$) ]] && sh_files+=("$f")
		;;
	esac
done < <(git ls-files -z --cached --others --exclude-standard)

rc=0
# run NAME CMD...: CMD with the files of array NAME, JOBS at a time, N files per call.
run() {
	local what=$1 n=$2 count
	shift 2
	local -n files=$what
	count=${#files[@]}
	if [ "$count" -eq 0 ]; then # a broken file list must not read as clean
		say "$1: no files found"
		rc=1
		return
	fi
	if printf '%s\0' "${files[@]}" | xargs -0 -r -P "$JOBS" -n "$n" "$@"; then
		say "$1: $count files clean"
	else
		say "$1: FAILED (above)"
		rc=1
	fi
}

run c_files 16 clang-format --dry-run --Werror
run sh_files 4 shellcheck
run js_files 1 node --check
exit "$rc"
