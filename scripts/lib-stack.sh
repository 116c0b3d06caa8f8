# shellcheck shell=bash
# lib-stack.sh: run terrarium's own MariaDB, API supervisors and nginx (or Apache, lighttpd)
# under one runtime directory RUN. Sourced by scripts/up.sh, scripts/down.sh, scripts/cluster.sh,
# the benchmarks and the test suites; it sources the parts in scripts/stack/, one per concern:
#   common.sh   constants, script_init, names and paths, stack_prepare, stack_scratch,
#               stack_traps, stack_stop_all
#   proc.sh     processes: spawn in a session, pid files, stop by PID, wait until ready, ports
#   db.sh       MariaDB: db_init, db_start, db_stop, db_sql, db_query
#   api.sh      the API supervisors and the reconciler (api_config, api_start, recon_start, ...)
#               and the API call of scripts and tests (api, api_ok)
#   nginx.sh    nginx_start, nginx_stop
#   servers.sh  Apache (mod_fcgid) and lighttpd (mod_fastcgi) instead of nginx
#   docker.sh   a Docker Engine for the docker backend
#   bench.sh    bench_init, bench_env, median
# Each part documents the environment variables it reads.
#
# Every function takes RUN (an absolute path) first, prints progress on stderr, returns 0 on
# success or 1 after saying what failed, and never exits the calling shell. No system service
# and no system configuration is used: MariaDB runs with --no-defaults on RUN/mysql.sock without
# networking, nginx with `-p RUN -c RUN/nginx.conf`. The stack's own components talk over unix
# sockets in RUN (MariaDB, FastCGI); TCP ports are for HTTP clients (and scripts/cluster.sh's
# hosts). Processes are started in their own session and stopped by the PID recorded in their
# pid file, after checking that the PID still runs the expected program (a stale pid file never
# kills an unrelated process).
#
# Files under RUN:
#   db/  mysql.sock  mariadb.pid  mariadb.log  db-password       MariaDB (db_init, db_start)
#   mysql/  what mariadbd writes itself: its socket (RUN/mysql.sock links to it) and pid file
#   db-owner-password  owner.ini                                  the schema owner (migrations)
#   NAME.ini  NAME.sock  NAME-poll.sock  NAME.pid  NAME.log       one API supervisor per NAME
#   operator.ini                                                  the operator's settings
#   reconciler.pid  reconciler.log  reconciler.prom               recon_start
#   nginx.conf  nginx-*.conf  nginx.pid  nginx-*.log  nginx-tmp/  nginx (nginx_start)
#   logrotate.conf                                                  every log (nginx_start)
#   apache*  lighttpd*                                            servers.sh
#   docker.sock  dockerd.pid  dockerd.log  docker-exec/  docker/  docker_engine

STACK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for _stack_part in common proc db api nginx servers docker bench; do
	# shellcheck source=/dev/null # each part is checked as a file of its own (make lint)
	. "$STACK_ROOT/scripts/stack/$_stack_part.sh"
done
unset _stack_part
