#!/usr/bin/env bash
# A 3-node MariaDB Galera cluster on 127.0.0.1 for the cluster tests.
#
#   scripts/galera.sh start          start (bootstrapping or recovering) all nodes
#   scripts/galera.sh stop           stop all nodes cleanly
#   scripts/galera.sh status         one line per node: port, pid, state, cluster size
#   scripts/galera.sh kill N         SIGKILL node N (1..3), as a crash would
#   scripts/galera.sh start-node N   start node N again and wait until it is Synced
#   scripts/galera.sh urls           the nodes' mysql:// URLs, one per line
#   scripts/galera.sh destroy        stop and delete every datadir
#
# Nodes listen on SQL ports 3307-3309 (IDEMGEN_GALERA_PORT_BASE changes the
# first) with their own datadirs, sockets and Galera ports under
# IDEMGEN_GALERA_DIR (default /var/tmp/idemgen-galera). The system MariaDB on
# 3306 is left alone. After a crash of every node, `start` bootstraps from the
# most advanced node (highest seqno, found with --wsrep-recover when the
# state file does not know it), so no committed write is lost.
set -euo pipefail

BASE_DIR="${IDEMGEN_GALERA_DIR:-/var/tmp/idemgen-galera}"
PORT_BASE="${IDEMGEN_GALERA_PORT_BASE:-3307}"
PROVIDER="${IDEMGEN_GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}"
NODES=(1 2 3)

sql_port() { echo $((PORT_BASE + $1 - 1)); }
# Galera's own ports: gcomm, IST and SST receive, 10 apart per node.
gcomm_port() { echo $((4567 + ($1 - 1) * 10)); }
ist_port() { echo $((4568 + ($1 - 1) * 10)); }
sst_port() { echo $((4569 + ($1 - 1) * 10)); }
node_dir() { echo "$BASE_DIR/node$1"; }
datadir() { echo "$(node_dir "$1")/data"; }
socket() { echo "$(node_dir "$1")/mysqld.sock"; }
pidfile() { echo "$(node_dir "$1")/mysqld.pid"; }
config() { echo "$(node_dir "$1")/my.cnf"; }

die() { echo "galera.sh: $*" >&2; exit 2; }

require_galera() {
    [ -x /usr/sbin/mariadbd ] || die "mariadbd not found (install mariadb-server)"
    [ -f "$PROVIDER" ] || die "Galera provider $PROVIDER not found (install galera-4)"
    command -v rsync >/dev/null || die "rsync not found (state transfer needs it: apt-get install rsync)"
}

client() {
    local node=$1
    shift
    mariadb --no-defaults --protocol=socket -S "$(socket "$node")" -u root -N -B "$@"
}

cluster_address() {
    local peers=()
    for n in "${NODES[@]}"; do peers+=("127.0.0.1:$(gcomm_port "$n")"); done
    local IFS=,
    echo "gcomm://${peers[*]}"
}

write_config() {
    local n=$1
    mkdir -p "$(node_dir "$n")"
    cat >"$(config "$n")" <<EOF
[mysqld]
user = mysql
datadir = $(datadir "$n")
socket = $(socket "$n")
pid-file = $(pidfile "$n")
port = $(sql_port "$n")
bind-address = 127.0.0.1
log-error = $(node_dir "$n")/error.log
skip-name-resolve
innodb_buffer_pool_size = 64M
innodb_log_file_size = 48M
max_connections = 400
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
wsrep_on = ON
wsrep_provider = $PROVIDER
wsrep_cluster_name = idemgen_test
wsrep_cluster_address = $(cluster_address)
wsrep_node_name = node$n
wsrep_node_address = 127.0.0.1:$(gcomm_port "$n")
wsrep_sst_method = rsync
wsrep_sst_receive_address = 127.0.0.1:$(sst_port "$n")
wsrep_provider_options = "gmcast.listen_addr=tcp://127.0.0.1:$(gcomm_port "$n");ist.recv_addr=127.0.0.1:$(ist_port "$n");gcache.size=64M"
EOF
    # Not recursive: the node's datadir (chowned once by `initialise`) may be
    # in use by a server that is still going down.
    chown mysql:mysql "$(node_dir "$n")" "$(config "$n")"
}

initialise() {
    local n=$1
    [ -d "$(datadir "$n")/mysql" ] && return 0
    write_config "$n"
    mariadb-install-db --no-defaults --datadir="$(datadir "$n")" --user=mysql \
        --auth-root-authentication-method=normal >"$(node_dir "$n")/install.log" 2>&1 \
        || die "mariadb-install-db failed for node $n: see $(node_dir "$n")/install.log"
    chown -R mysql:mysql "$(node_dir "$n")"
}

# The node's process: from its pid file, or (until mariadbd writes that,
# which a joiner does only after its state transfer) the pid `launch` saw.
pid_of() {
    local file pid
    for file in "$(pidfile "$1")" "$(node_dir "$1")/launched.pid"; do
        [ -f "$file" ] || continue
        pid=$(cat "$file")
        if kill -0 "$pid" 2>/dev/null; then
            echo "$pid"
            return 0
        fi
    done
    return 1
}

running() { pid_of "$1" >/dev/null; }

state_of() { client "$1" -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | cut -f2; }
size_of() { client "$1" -e "SHOW STATUS LIKE 'wsrep_cluster_size'" 2>/dev/null | cut -f2; }

wait_synced() {
    local n=$1
    for _ in $(seq 1 240); do
        if ! running "$n"; then
            echo "node $n exited; last lines of its log:" >&2
            tail -n 20 "$(node_dir "$n")/error.log" >&2 || true
            return 1
        fi
        [ "$(state_of "$n")" = "Synced" ] && return 0
        sleep 0.5
    done
    echo "node $n did not reach Synced in 120 s" >&2
    return 1
}

launch() {
    local n=$1
    shift
    write_config "$n"
    # mariadbd runs in the background with its own pid file; its stdout is the log.
    nohup /usr/sbin/mariadbd --defaults-file="$(config "$n")" "$@" \
        >>"$(node_dir "$n")/error.log" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$(node_dir "$n")/launched.pid"
    sleep 0.5
    kill -0 "$pid" 2>/dev/null && return 0
    echo "node $n did not start; last lines of its log:" >&2
    tail -n 20 "$(node_dir "$n")/error.log" >&2 || true
    return 1
}

# The seqno a node's datadir has committed up to (-1 when unknown).
seqno_of() {
    local n=$1 state seqno
    state="$(datadir "$n")/grastate.dat"
    seqno=$(awk '/^seqno:/ {print $2}' "$state" 2>/dev/null || true)
    if [ -z "$seqno" ] || [ "$seqno" = "-1" ]; then
        # After a crash the state file says -1: ask InnoDB for the position.
        seqno=$(/usr/sbin/mariadbd --defaults-file="$(config "$n")" --wsrep-recover \
            --log-error="$(node_dir "$n")/recover.log" >/dev/null 2>&1;
            grep -o 'Recovered position: [^ ]*' "$(node_dir "$n")/recover.log" | tail -n1 | awk -F: '{print $NF}')
    fi
    echo "${seqno:--1}"
}

bootstrap_node() {
    local best=1 best_seqno=-2
    for n in "${NODES[@]}"; do
        local s
        s=$(seqno_of "$n")
        if [ "$s" -gt "$best_seqno" ]; then best=$n; best_seqno=$s; fi
    done
    echo "$best"
}

start_node() {
    local n=$1
    running "$n" && { wait_synced "$n"; return; }
    initialise "$n"
    launch "$n"
    wait_synced "$n"
}

start() {
    require_galera
    for n in "${NODES[@]}"; do initialise "$n"; done
    local any=0
    for n in "${NODES[@]}"; do running "$n" && any=1; done
    if [ "$any" = 0 ]; then
        local first
        first=$(bootstrap_node)
        sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$(datadir "$first")/grastate.dat" 2>/dev/null || true
        echo "bootstrapping the cluster from node $first"
        launch "$first" --wsrep-new-cluster
        wait_synced "$first"
    fi
    for n in "${NODES[@]}"; do start_node "$n"; done
    client 1 -e "CREATE DATABASE IF NOT EXISTS test"
    status
}

stop() {
    for n in "${NODES[@]}"; do
        local pid
        pid=$(pid_of "$n") || continue
        kill "$pid"
    done
    for n in "${NODES[@]}"; do
        for _ in $(seq 1 120); do running "$n" || break; sleep 0.5; done
        if running "$n"; then kill -9 "$(pid_of "$n")" 2>/dev/null || true; fi
    done
}

kill_node() {
    local n=$1 pid
    pid=$(pid_of "$n") || die "node $n is not running"
    kill -9 "$pid"
    for _ in $(seq 1 40); do running "$n" || return 0; sleep 0.25; done
}

status() {
    for n in "${NODES[@]}"; do
        if pid=$(pid_of "$n"); then
            echo "node$n 127.0.0.1:$(sql_port "$n") pid $pid $(state_of "$n") cluster_size=$(size_of "$n")"
        else
            echo "node$n 127.0.0.1:$(sql_port "$n") down"
        fi
    done
}

urls() {
    for n in "${NODES[@]}"; do echo "mysql://root@127.0.0.1:$(sql_port "$n")/test"; done
}

check_node() {
    case "${1:-}" in 1 | 2 | 3) ;; *) die "name a node: 1, 2 or 3" ;; esac
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    urls) urls ;;
    kill) check_node "${2:-}"; kill_node "$2" ;;
    start-node) check_node "${2:-}"; require_galera; start_node "$2" ;;
    destroy) stop; rm -rf "$BASE_DIR" ;;
    *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
