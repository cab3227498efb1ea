#!/usr/bin/env bash
# Runs the example service end to end: builds and starts cmd/orders against the
# local RabbitMQ and MariaDB, places a few orders over HTTP, waits for each to be
# shipped by the consumer, shows the metrics that moved, and stops it cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v curl >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null
	else
		echo "the demo drives the service with curl, which is not installed"; exit 1
	fi
fi

addr=${DEMO_HTTP:-127.0.0.1:18080}
workdir=$(mktemp -d)
log="$workdir/orders.log"
pid=""
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; fi
	rm -rf "$workdir"
}
trap cleanup EXIT

echo "== building the example service (cmd/orders)"
go build -o "$workdir/orders" ./cmd/orders

echo "== starting it on $addr"
"$workdir/orders" -http "$addr" >"$log" 2>&1 &
pid=$!

for _ in $(seq 1 60); do
	if curl -fsS "http://$addr/status" >/dev/null 2>&1; then break; fi
	if ! kill -0 "$pid" 2>/dev/null; then echo "the service exited:"; cat "$log"; exit 1; fi
	sleep 0.5
done
curl -fsS "http://$addr/status" >/dev/null || { echo "the service did not become healthy:"; cat "$log"; exit 1; }

ids=()
for item in book lamp kettle; do
	body=$(curl -fsS -X POST -H 'Content-Type: application/json' -d "{\"item\":\"$item\",\"quantity\":1}" "http://$addr/orders")
	id=$(printf '%s' "$body" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
	echo "placed   $item -> $body"
	ids+=("$id")
done

echo "== a retry with the same Idempotency-Key returns the first order (200), not a second one"
key="demo-$(date +%s%N)"
first=$(curl -fsS -X POST -H "Idempotency-Key: $key" -d '{"item":"desk","quantity":1}' "http://$addr/orders")
retry=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Idempotency-Key: $key" -d '{"item":"desk","quantity":1}' "http://$addr/orders")
again=$(curl -fsS -X POST -H "Idempotency-Key: $key" -d '{"item":"desk","quantity":1}' "http://$addr/orders" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
first_id=$(printf '%s' "$first" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
echo "first    $first_id; retry -> $retry, id $again"
if [ "$retry" != 200 ] || [ "$again" != "$first_id" ]; then echo "the retry did not return the first order"; cat "$log"; exit 1; fi
ids+=("$first_id")

echo "== bad input is a 400 naming the field"
curl -sS -X POST -d '{"item":"book","quantity":2147483648}' "http://$addr/orders"

for id in "${ids[@]}"; do
	status=""
	for _ in $(seq 1 60); do
		status=$(curl -fsS "http://$addr/orders/$id" | sed -n 's/.*"status":"\([^"]*\)".*/\1/p')
		[ "$status" = shipped ] && break
		sleep 0.5
	done
	echo "order    $id -> $status"
	if [ "$status" != shipped ]; then echo "order $id did not reach shipped; service log:"; cat "$log"; exit 1; fi
done

echo "== a quote, asked and answered through request and reply (patterns/request)"
quote=$(curl -fsS "http://$addr/orders/${ids[0]}/quote") || { echo "the quote failed; service log:"; cat "$log"; exit 1; }
echo "quote    ${ids[0]} -> $quote"

echo "== metrics that moved"
curl -fsS "http://$addr/metrics" | grep -E '^(amqp_publish_total|amqp_commit_total|outbox_stored_total|outbox_confirmed_total|consumer_acknowledged_total|consumer_batch_seconds_count)' || true

echo "== stopping (SIGTERM: consumer first, then the outbox dispatcher)"
kill -TERM "$pid"
for _ in $(seq 1 40); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.25
done
if kill -0 "$pid" 2>/dev/null; then echo "the service did not stop within 10s"; cat "$log"; exit 1; fi
wait "$pid" || { echo "the service exited with an error:"; cat "$log"; exit 1; }
pid=""
echo "demo ok: ${#ids[@]} orders placed and shipped"
