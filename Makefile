# make demo      runs the example service end to end against the local services
# make test      gofmt check, go vet, and every unit, integration and fault test under -race
# make services  starts RabbitMQ, MariaDB and PostgreSQL when they are down
# make bench     our stack beside the raw amqp091-go client, as ratios; each codec beside JSON
# make bench-peers  watermill beside ours and the raw client, in one run (module bench/peers)
# make console   the operator console on http://127.0.0.1:7070/ over the example service's queues, outbox and health
# make cluster   a three-node RabbitMQ cluster on 5681-5683 beside the default broker (make cluster-stop)

GO ?= go
PACKAGES := ./...

.PHONY: all test fmt-check vet services demo bench bench-peers faults compile tidy cluster cluster-stop console

all: test

services:
	@bash scripts/services.sh

fmt-check:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi

vet:
	$(GO) vet $(PACKAGES)

test: fmt-check vet
	$(GO) test -race -count=1 -timeout 20m $(PACKAGES)

console: services
	$(GO) run ./cmd/warrenmq console -actions \
		-queue orders.ship -queue orders.shipped-log -queue orders.quote -stream orders.shipments \
		-service http://127.0.0.1:8080/status \
		-dsn 'root@tcp(127.0.0.1:3306)/test?parseTime=true' -table Messages -checkpoints stream_checkpoints

cluster: services
	@bash scripts/cluster.sh start

cluster-stop:
	@bash scripts/cluster.sh stop

compile:
	$(GO) build $(PACKAGES)

demo: services
	@bash scripts/demo.sh

bench: services
	$(GO) run ./bench
	@GO=$(GO) bash scripts/codec-bench.sh

bench-peers: services
	cd bench/peers && $(GO) run .

faults: services
	$(GO) test -race -count=1 -timeout 60m -run Fault -v ./internal/faults/ -faults.full
	WARRENMQ_FAULTS_FULL=1 $(GO) test -race -count=1 -timeout 20m -run RollingRestart -v ./cmd/orders/

tidy:
	$(GO) mod tidy
