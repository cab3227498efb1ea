#!/usr/bin/env bash
# Makes sure RabbitMQ, MariaDB and PostgreSQL are running and answering on this
# machine, starting (and on Debian, installing) whichever is down. Exits non-zero
# with the name of the service that could not be reached.
set -uo pipefail

log() { printf 'services: %s\n' "$*" >&2; }

port_open() { timeout 2 bash -c "</dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# wait_until NAME SECONDS COMMAND...: polls COMMAND once a second.
wait_until() {
	local name=$1 seconds=$2
	shift 2
	for _ in $(seq 1 "$seconds"); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 1
	done
	log "$name did not answer within ${seconds}s"
	return 1
}

install_if_missing() {
	local binary=$1 package=$2
	command -v "$binary" >/dev/null 2>&1 && return 0
	[ -x "$binary" ] && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		log "installing $package"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
	else
		log "$package is not installed and cannot be installed here (needs root and apt-get)"
		return 1
	fi
}

rabbitmq_ready() { port_open 5672 && timeout 20 rabbitmqctl -q await_startup >/dev/null 2>&1; }
mariadb_ready() { timeout 5 mariadb -uroot -h127.0.0.1 -e "SELECT 1" >/dev/null 2>&1; }
postgres_ready() { timeout 5 psql -h 127.0.0.1 -U postgres -d postgres -Atc "SELECT 1" >/dev/null 2>&1; }

start_rabbitmq() {
	rabbitmq_ready && return 0
	install_if_missing rabbitmq-server rabbitmq-server || return 1
	if ! port_open 5672; then
		log "starting RabbitMQ"
		rabbitmq-server -detached >/dev/null 2>&1 || true
	fi
	wait_until RabbitMQ 90 rabbitmq_ready || return 1
}

start_mariadb() {
	mariadb_ready && return 0
	install_if_missing /usr/sbin/mariadbd mariadb-server || return 1
	log "starting MariaDB"
	mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
	start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd >/dev/null 2>&1 || true
	wait_until MariaDB 60 mariadb_ready || return 1
}

start_postgres() {
	postgres_ready && return 0
	install_if_missing pg_ctlcluster postgresql || return 1
	log "starting PostgreSQL"
	pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start >/dev/null 2>&1 || true
	wait_until PostgreSQL 60 postgres_ready || return 1
}

# The operator console's browser test drives Debian's chromium headless; without
# it that one test is skipped, saying so, and everything else still runs.
install_if_missing chromium chromium || log "Chromium is not installed: the console's browser test will be skipped"

failed=()
start_rabbitmq || failed+=("RabbitMQ (127.0.0.1:5672; try: rabbitmq-server -detached)")
start_mariadb || failed+=("MariaDB (127.0.0.1:3306; try: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd)")
start_postgres || failed+=("PostgreSQL (127.0.0.1:5432; try: pg_ctlcluster --skip-systemctl-redirect \$(ls /etc/postgresql) main start)")

if [ ${#failed[@]} -gt 0 ]; then
	for f in "${failed[@]}"; do log "cannot reach $f"; done
	exit 1
fi

# A fault test that died mid-way may have left the broker with an alarm or the
# app stopped; put it back as the tests expect it.
timeout 20 rabbitmqctl -q start_app >/dev/null 2>&1 || true
timeout 20 rabbitmqctl -q set_vm_memory_high_watermark 0.4 >/dev/null 2>&1 || true

# The test databases.
timeout 10 mariadb -uroot -h127.0.0.1 -e 'CREATE DATABASE IF NOT EXISTS test' || { log "cannot create MariaDB database test"; exit 1; }
if ! timeout 10 psql -h 127.0.0.1 -U postgres -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname='test'" | grep -q 1; then
	timeout 10 psql -h 127.0.0.1 -U postgres -d postgres -c 'CREATE DATABASE test' >/dev/null || { log "cannot create PostgreSQL database test"; exit 1; }
fi
log "RabbitMQ, MariaDB and PostgreSQL are up"
