#!/usr/bin/env bash
# A three-node Fathom cluster on this machine, for trying it out:
#   three nats-server processes forming a JetStream cluster (client ports 4222-4224),
#   three `fathom serve --cluster` nodes (HTTP ports 8108-8110), data under ./cluster-demo/.
# Ctrl-C stops everything. Needs nats-server (apt-get install nats-server) and `npm install`.
#   KEY=secret scripts/cluster-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
KEY="${KEY:-demo-key}"
DIR="${DIR:-./cluster-demo}"
NATS="$(command -v nats-server || echo /usr/sbin/nats-server)"
[ -x "$NATS" ] || { echo "nats-server not found: apt-get install nats-server" >&2; exit 1; }
mkdir -p "$DIR"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

routes="nats-route://127.0.0.1:6222, nats-route://127.0.0.1:6223, nats-route://127.0.0.1:6224"
for i in 1 2 3; do
  mkdir -p "$DIR/nats$i"
  cat > "$DIR/nats$i/nats.conf" <<CONF
server_name: nats$i
listen: 127.0.0.1:$((4221 + i))
max_payload: 8MB
jetstream { store_dir: "$DIR/nats$i/js" }
cluster { name: fathom-demo, listen: 127.0.0.1:$((6221 + i)), routes: [$routes] }
CONF
  "$NATS" -c "$DIR/nats$i/nats.conf" > "$DIR/nats$i/log" 2>&1 &
  pids+=($!)
done
sleep 1
for i in 1 2 3; do
  # this node's own NATS server first, then the others
  urls="nats://127.0.0.1:$((4221 + i))"
  for j in 1 2 3; do [ "$j" = "$i" ] || urls+=",nats://127.0.0.1:$((4221 + j))"; done
  node bin/fathom.js serve -d "$DIR/node$i" --api-key "$KEY" --api-address 127.0.0.1 --api-port $((8107 + i)) \
    --cluster "$urls" --node-name "node$i" > "$DIR/node$i.log" 2>&1 &
  pids+=($!)
done
# wait for every node, and stop at once when a process exits (a port in use, say)
for port in 8108 8109 8110; do
  until curl -sf "localhost:$port/health" >/dev/null 2>&1; do
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "a process of the demo exited; see the logs in $DIR (nats*/log, node*.log)" >&2; exit 1; }
    done
    sleep 0.3
  done
done
cat <<MSG
A three-node cluster is up (logs in $DIR). Write to any node, read from any:
  curl -s localhost:8108/collections -H "X-TYPESENSE-API-KEY: $KEY" -d @fixtures/example/books.schema.json
  curl -s localhost:8109/collections/books/documents/import -H "X-TYPESENSE-API-KEY: $KEY" --data-binary @fixtures/example/books.jsonl
  curl -s "localhost:8110/collections/books/documents/search?q=gardn&query_by=title" -H "X-TYPESENSE-API-KEY: $KEY"
  curl -s localhost:8108/debug -H "X-TYPESENSE-API-KEY: $KEY"      # role, lag
Ctrl-C stops it.
MSG
wait
