#!/usr/bin/env bash
# Starts (or stops) a three-node RabbitMQ cluster on this machine, beside the
# default broker on 5672: nodes c1@localhost, c2@localhost and c3@localhost on
# AMQP ports 5681-5683 (distribution ports 25681-25683), each with its own
# config file, data, log and feature-flags files under $CLUSTER_DIR, joined to
# c1, no plugins. Needs only the Debian rabbitmq-server package (as
# `make services` does) and root, as the package's scripts run the nodes as the
# rabbitmq user.
#
#   scripts/cluster.sh start    start every node that is down, together (clustered
#                               nodes wait at boot for each other), join, wait
#                               until all run, within CLUSTER_START_SECONDS (240)
#   scripts/cluster.sh stop     stop the three nodes (the data is kept)
#   scripts/cluster.sh reset    stop them and delete their data
#   scripts/cluster.sh status   print each node's state; exit 1 unless all run
set -uo pipefail

CLUSTER_DIR=${CLUSTER_DIR:-/var/tmp/warrenmq-cluster}
NODES=(c1 c2 c3)
FIRST_PORT=5681

log() { printf 'cluster: %s\n' "$*" >&2; }

port_of() { # port_of c2 -> 5682
	local i
	for i in "${!NODES[@]}"; do
		[ "${NODES[$i]}" = "$1" ] && { echo $((FIRST_PORT + i)); return; }
	done
}

port_open() { timeout 2 bash -c "</dev/tcp/127.0.0.1/$1" 2>/dev/null; }

ctl() { # ctl NODE args...
	local node=$1
	shift
	timeout 60 rabbitmqctl -q -n "$node@localhost" "$@"
}

node_env() { # exports what one node needs; the package's script keeps it through su
	local node=$1 port
	port=$(port_of "$node")
	local base="$CLUSTER_DIR/$node"
	export RABBITMQ_NODENAME="$node@localhost"
	export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
	export RABBITMQ_NODE_PORT="$port"
	export RABBITMQ_DIST_PORT=$((port + 20000))
	export RABBITMQ_CONFIG_FILE="$base/rabbitmq.conf"
	export RABBITMQ_MNESIA_BASE="$base/mnesia"
	export RABBITMQ_MNESIA_DIR="$base/mnesia/$node@localhost"
	export RABBITMQ_LOG_BASE="$base/log"
	export RABBITMQ_FEATURE_FLAGS_FILE="$base/feature_flags"
	export RABBITMQ_ENABLED_PLUGINS_FILE="$base/enabled_plugins"
	export RABBITMQ_PLUGINS_EXPAND_DIR="$base/plugins-expand"
	export RABBITMQ_QUORUM_DIR="$base/mnesia/$node@localhost/quorum"
	export RABBITMQ_STREAM_DIR="$base/mnesia/$node@localhost/stream"
	# Two cores shared with the default broker and the tests: one scheduler each.
	export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+S 1:1 +sbwt none +sbwtdcpu none +sbwtdio none"
}

prepare() {
	local node=$1 port base
	port=$(port_of "$node")
	base="$CLUSTER_DIR/$node"
	mkdir -p "$base/mnesia" "$base/log" "$base/plugins-expand"
	cat >"$base/rabbitmq.conf" <<CONF
listeners.tcp.local = 127.0.0.1:$port
loopback_users.guest = true
vm_memory_high_watermark.relative = 0.2
disk_free_limit.absolute = 50MB
CONF
	echo "[]." >"$base/enabled_plugins"
	chown -R rabbitmq:rabbitmq "$CLUSTER_DIR" 2>/dev/null || true
}

running() { [ "$(state "$1")" = running ]; }

# state NODE prints running, stopped (the node's VM answers but RabbitMQ in it
# does not run: booting, or stopped with stop_app) or down (no VM).
state() {
	local out
	out=$(timeout 20 rabbitmqctl -q -n "$1@localhost" eval 'rabbit:is_running().' 2>/dev/null) || { echo down; return; }
	if [ "$out" = true ]; then echo running; else echo stopped; fi
}

launch() { # launch NODE: start its VM, detached, without waiting for it
	local node=$1
	prepare "$node"
	log "starting $node@localhost on port $(port_of "$node")"
	(node_env "$node" && rabbitmq-server -detached >/dev/null 2>&1) || true
}

members() { ctl "$1" cluster_status --formatter json 2>/dev/null | tr -d ' \n'; }

join() { # join NODE: make NODE a member of c1's cluster unless it is one
	local node=$1
	if members "${NODES[0]}" | grep -q "\"running_nodes\":\[[^]]*\"$node@localhost\""; then return 0; fi
	log "joining $node@localhost to ${NODES[0]}@localhost"
	local out="$CLUSTER_DIR/$node/join.log"
	if ! { ctl "$node" stop_app && ctl "$node" reset && ctl "$node" join_cluster "${NODES[0]}@localhost" && ctl "$node" start_app; } >"$out" 2>&1; then
		cat "$out" >&2
		return 1
	fi
}

status() {
	local ok=0 node
	for node in "${NODES[@]}"; do
		if running "$node"; then echo "$node@localhost running on 127.0.0.1:$(port_of "$node")"; else echo "$node@localhost down"; ok=1; fi
	done
	[ $ok = 0 ] && members "${NODES[0]}" | grep -q "\"running_nodes\":\[[^]]*c1@localhost[^]]*\]" || ok=1
	return $ok
}

start() {
	command -v rabbitmq-server >/dev/null || { log "rabbitmq-server is not installed; run make services first"; exit 1; }
	[ "$(id -u)" = 0 ] || { log "must run as root: the package's scripts start nodes as the rabbitmq user"; exit 1; }
	local deadline=$((SECONDS + ${CLUSTER_START_SECONDS:-240})) node
	# Every node that is down starts at once, not one after another: nodes
	# that were clustered wait at boot for the others' tables, so a node
	# started alone after a full stop waits (minutes) for peers that are
	# never started.
	for node in "${NODES[@]}"; do
		case $(state "$node") in
		down) launch "$node" ;;
		stopped)
			# Booting, or stopped with stop_app by a test that then died:
			# start_app is harmless for the first and needed for the second.
			log "starting RabbitMQ in the running VM of $node@localhost"
			(ctl "$node" start_app >/dev/null 2>&1 &)
			;;
		esac
	done
	for node in "${NODES[@]}"; do
		until running "$node"; do
			if [ $SECONDS -ge "$deadline" ]; then
				log "$node@localhost did not start within ${CLUSTER_START_SECONDS:-240} s; see $CLUSTER_DIR/$node/log"
				exit 1
			fi
			sleep 1
		done
	done
	for node in "${NODES[@]:1}"; do join "$node" || { log "could not join $node@localhost"; exit 1; }; done
	while [ $SECONDS -lt "$deadline" ]; do
		local all
		all=$(members "${NODES[0]}")
		if [[ $all == *'"c1@localhost"'* && $all == *'"c2@localhost"'* && $all == *'"c3@localhost"'* ]] &&
			[ "$(grep -o '"running_nodes":\[[^]]*\]' <<<"$all" | grep -o '@localhost' | wc -l)" = 3 ]; then
			log "three nodes running: amqp://guest:guest@127.0.0.1:5681/ 5682 5683"
			return 0
		fi
		sleep 1
	done
	log "the nodes did not all report running as one cluster within ${CLUSTER_START_SECONDS:-240} s"
	exit 1
}

stop() {
	local node
	for node in "${NODES[@]}"; do
		if [ "$(state "$node")" != down ]; then
			log "stopping $node@localhost"
			ctl "$node" stop >/dev/null 2>&1 || true
		fi
	done
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
reset) stop; rm -rf "$CLUSTER_DIR" ;;
status) status ;;
*) echo "usage: $0 start|stop|reset|status" >&2; exit 2 ;;
esac
