#!/bin/sh
# Print /etc/nginx/sites-available/terrarium, made from the templates `make up` uses (NGINX_DIR:
# nginx/): the http-level maps (request id, rate-limit key) and client limits of
# terrarium.conf.in, then server.conf.in for 127.0.0.1:8080 -> unix:/run/terrarium/api.sock,
# with the limits inside the server block so that other sites keep their own.
set -eu
dir=${1:-nginx}
stack=$(dirname "$0")/../scripts/stack/nginx.sh
rate=$(sed -n 's/^STACK_DEFAULT_RATE=\([0-9]*\).*/\1/p' "$stack")
burst=$(sed -n 's/^STACK_DEFAULT_BURST=\([0-9]*\).*/\1/p' "$stack")
heavy_rate=$(sed -n 's/^STACK_DEFAULT_HEAVY_RATE=\([0-9]*\).*/\1/p' "$stack")
heavy_burst=$(sed -n 's/^STACK_DEFAULT_HEAVY_BURST=\([0-9]*\).*/\1/p' "$stack")
if [ -z "$rate" ] || [ -z "$burst" ] || [ -z "$heavy_rate" ] || [ -z "$heavy_burst" ]; then
	echo "nginx-site.sh: no rate defaults in $stack" >&2
	exit 1
fi
sock=/run/terrarium/api.sock
poll_sock=/run/terrarium/api-poll.sock # [api] poll_socket of debian/conf/terrarium.ini

cat <<HEAD
# terrarium: nginx in front of the API supervisor (terrarium-api.service) on $sock.
# Enable with
#   ln -s ../sites-available/terrarium /etc/nginx/sites-enabled/terrarium && systemctl reload nginx
# Generated from the project's nginx/ templates by debian/nginx-site.sh when the package was
# built. Listens on 127.0.0.1:8080; put TLS and a public name in front (or change listen).

HEAD
# the map blocks of the http context
awk '/^[ \t]*map .*\{[ \t]*$/ { inmap = 1 } inmap { print } inmap && /^[ \t]*\}[ \t]*$/ { inmap = 0; print "" }' \
	"$dir/terrarium.conf.in"
limits=$(grep -E '^[[:space:]]*(client_max_body_size|client_body_buffer_size|client_header_timeout|client_body_timeout|send_timeout|keepalive_timeout|server_tokens|default_type)[[:space:]]' \
	"$dir/terrarium.conf.in" | sed 's/^[[:space:]]*/\t/')
# event streams (docs/events.md): the package's nginx holds none itself (no nchan is assumed):
# the API's long-poll workers do, so stream-workers.conf.in goes where make up includes a file
awk -v streams="$dir/stream-workers.conf.in" '
	/include "@RUN@\/nginx-stream-@ZONE@.conf";/ {
		while ((getline line < streams) > 0)
			if (line !~ /^#/) print "\t" line
		next
	}
	{ print }' "$dir/server.conf.in" |
sed -e "s|include \"@RUN@/nginx-fastcgi.conf\";|include /usr/share/terrarium/nginx/fastcgi.conf;|" \
	-e "s|@LISTEN@|127.0.0.1:8080|g; s|@ZONE@|8080|g; s|@NAME@|api|g; s|@SOCKET@|$sock|g; s|@RATE@|${rate}r/s|g" \
	-e "s|@BURST@|$burst|g; s|@PASS@|\"unix:$sock\"|g; s|@KEEP_CONN@|off|g" \
	-e "s|@POLL_PASS@|\"unix:$poll_sock\"|g" \
	-e "s|@HEAVY_RATE@|${heavy_rate}r/s|g; s|@HEAVY_BURST@|$heavy_burst|g" |
	awk -v limits="$limits" '
	{ print }
	!done && /^server \{/ { print limits; print "\ttypes { }"; done = 1 }'
