#!/usr/bin/env bash
# Runs a three-node Cellcast cluster on loopback (docs/cluster.md): three
# brokers, each embedding a NATS server clustered with the others, with
# JetStream keeping every shard's log on all three. Ctrl-C stops them.
#
#   scripts/cluster-local.sh [BROKER_BINARY] [DATA_DIR] [BROKER FLAGS...]
#
# Node i serves WebSocket and HTTP on 127.0.0.1:808i, NATS clients on
# 127.0.0.1:422i and NATS routes on 127.0.0.1:622i.
#
# With NATS_SERVER=path/to/nats-server the three NATS servers run as
# processes of their own, on the same ports, and the brokers join them
# with --nats-url: a broker that dies then takes no NATS server with it
# (docs/cluster-benchmarks.md).
set -euo pipefail
bin=${1:-./.bin/broker}
data=${2:-./data/cluster}
routes=127.0.0.1:6221,127.0.0.1:6222,127.0.0.1:6223
pids=()
stop() {
	trap - INT TERM EXIT
	kill "${pids[@]}" 2>/dev/null || true
	wait || true
}
trap stop INT TERM EXIT
urls=nats://127.0.0.1:4221,nats://127.0.0.1:4222,nats://127.0.0.1:4223
if [[ -n ${NATS_SERVER:-} ]]; then
	for i in 1 2 3; do
		mkdir -p "$data/nats$i"
		"$NATS_SERVER" -n "nats$i" -a 127.0.0.1 -p "422$i" -js -sd "$data/nats$i" \
			--cluster_name cellcast-nats --cluster "nats://127.0.0.1:622$i" \
			--routes "nats://${routes//,/,nats://}" > >(sed -u "s/^/nats$i | /") 2>&1 &
		pids+=($!)
	done
	for i in 1 2 3; do # a broker that finds no NATS server at start gives up
		for _ in $(seq 100); do
			(exec 3<>"/dev/tcp/127.0.0.1/422$i") 2>/dev/null && break
			sleep 0.1
		done
	done
fi
for i in 1 2 3; do
	mkdir -p "$data/n$i"
	if [[ -n ${NATS_SERVER:-} ]]; then
		net=(--nats-url "$urls")
	else
		net=(--nats-listen "127.0.0.1:422$i" --cluster-listen "127.0.0.1:622$i" --cluster-routes "$routes")
	fi
	"$bin" --cluster-node "n$i" --data "$data/n$i" --http "127.0.0.1:808$i" "${net[@]}" \
		"${@:3}" > >(sed -u "s/^/n$i | /") 2>&1 &
	pids+=($!)
done
echo "cluster starting: ws://127.0.0.1:8081/ws, ws://127.0.0.1:8082/ws, ws://127.0.0.1:8083/ws (Ctrl-C stops)"
wait
