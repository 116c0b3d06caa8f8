# shellcheck shell=bash
# lib-npm.sh: the locked npm packages of a test directory (sourced).
#   npm_locked DIR   `npm ci` in DIR (its package-lock.json) unless DIR/node_modules was
#                    installed from that very lock: node_modules/.terrarium-lock is a copy of
#                    the lock it came from, written once npm ci succeeded. 0, or 1 (npm's
#                    messages on stderr) when npm ci failed.
npm_locked() {
	local dir=$1 stamp=$1/node_modules/.terrarium-lock
	if [ -f "$stamp" ] && cmp -s "$dir/package-lock.json" "$stamp"; then
		return 0
	fi
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2 || return 1
	cp "$dir/package-lock.json" "$stamp"
}
