#!/bin/sh
# Three cronwheel nodes on one PostgreSQL: a local cluster to try failover by hand.
#
#   examples/cluster-3-nodes.sh postgresql://user@localhost/cronwheel [DIR]
#
# Each node gets its own data dir under DIR (default ./cluster), node id node1..node3 and
# HTTP port PORT_BASE+1..+3 (PORT_BASE defaults to 7880; PORT_BASE=0 picks free ports, each
# written to DIR/nodeN/http.addr). The nodes share the 64 buckets by lease: kill -9 one and
# watch `cronwheel --data-dir DIR/node1 status` show the others take its buckets over.
# Stop them all with:  kill $(cat DIR/node*.pid)
set -eu
DSN=${1:?usage: cluster-3-nodes.sh POSTGRES_URL [DIR]}
DIR=${2:-./cluster}
PORT_BASE=${PORT_BASE:-7880}
CRONWHEEL=${CRONWHEEL:-cronwheel}
mkdir -p "$DIR"
for i in 1 2 3; do
    port=0
    [ "$PORT_BASE" -ne 0 ] && port=$((PORT_BASE + i))
    $CRONWHEEL serve --store "$DSN" --node-id "node$i" --data-dir "$DIR/node$i" \
        --http "127.0.0.1:$port" --log-format json >"$DIR/node$i.log" 2>&1 &
    echo $! >"$DIR/node$i.pid"
done
echo "started node1..node3 (logs in $DIR/node*.log); status: $CRONWHEEL --data-dir $DIR/node1 status"
