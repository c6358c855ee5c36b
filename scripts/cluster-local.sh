#!/usr/bin/env bash
# Runs a three-node Cellcast cluster on loopback (docs/cluster.md): three
# brokers, each embedding a NATS server clustered with the others, with
# JetStream keeping every shard's log on all three. Ctrl-C stops them.
#
#   scripts/cluster-local.sh [BROKER_BINARY] [DATA_DIR]
#
# Node i serves WebSocket and HTTP on 127.0.0.1:808i, NATS clients on
# 127.0.0.1:422i and NATS routes on 127.0.0.1:622i.
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
for i in 1 2 3; do
	mkdir -p "$data/n$i"
	"$bin" --cluster-node "n$i" --data "$data/n$i" \
		--http "127.0.0.1:808$i" --nats-listen "127.0.0.1:422$i" \
		--cluster-listen "127.0.0.1:622$i" --cluster-routes "$routes" \
		"${@:3}" > >(sed -u "s/^/n$i | /") 2>&1 &
	pids+=($!)
done
echo "cluster starting: ws://127.0.0.1:8081/ws, ws://127.0.0.1:8082/ws, ws://127.0.0.1:8083/ws (Ctrl-C stops)"
wait
