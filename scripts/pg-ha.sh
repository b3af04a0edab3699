#!/usr/bin/env bash
# A PostgreSQL 15 primary with a synchronous standby on 127.0.0.1, failed
# over automatically by pg_auto_failover (a monitor plus two nodes), for the
# failover tests.
#
#   scripts/pg-ha.sh start          start (creating on first use) the monitor and both nodes
#   scripts/pg-ha.sh stop           stop every node and the monitor cleanly
#   scripts/pg-ha.sh status         one line per node: port, pid, role, state
#   scripts/pg-ha.sh kill N         SIGKILL node N (1 or 2) and its keeper, as a crash would
#   scripts/pg-ha.sh freeze N       SIGSTOP node N and its keeper: it stops answering, its
#                                   connections stay open, as in a network partition
#   scripts/pg-ha.sh thaw N         SIGCONT node N and its keeper (the partition heals)
#   scripts/pg-ha.sh start-node N   start node N again and wait until it is a primary or a synced standby
#   scripts/pg-ha.sh primary        the port of the current primary
#   scripts/pg-ha.sh wait-failover  wait until a primary with a synced standby answers
#   scripts/pg-ha.sh url            the service's multi-host URL (target_session_attrs=read-write)
#   scripts/pg-ha.sh destroy        stop and delete every datadir
#
# The monitor listens on 5450 and the nodes on 5451 and 5452
# (IDEMGEN_PGHA_PORT_BASE changes the monitor's; the nodes follow), with
# their own datadirs and pg_autoctl state under IDEMGEN_PGHA_DIR (default
# /var/tmp/idemgen-pgha). The system PostgreSQL on 5432 is left alone.
# Everything runs as the postgres OS user (pg_autoctl and initdb refuse root).
# The timeouts are shortened so a dead primary is failed over in seconds,
# not the default half minute, keeping pg_auto_failover's safety rule: the
# monitor waits longer before promoting the standby
# (primary_demote_timeout, 6 s here, 30 s by default) than an isolated
# primary's keeper waits before demoting it (network_partition_timeout, 4 s
# here, 20 s by default), so there are never two primaries. The shortened
# values are for tests on one machine, not for production: keep the
# defaults' ratio and margins there.
set -euo pipefail

BASE_DIR="${IDEMGEN_PGHA_DIR:-/var/tmp/idemgen-pgha}"
PORT_BASE="${IDEMGEN_PGHA_PORT_BASE:-5450}"
PG_BIN="${IDEMGEN_PGHA_PG_BIN:-/usr/lib/postgresql/15/bin}"
NODES=(1 2)
PG_USER=postgres

port() { echo $((PORT_BASE + $1)); } # 0 is the monitor
node_dir() { if [ "$1" = 0 ]; then echo "$BASE_DIR/monitor"; else echo "$BASE_DIR/node$1"; fi; }
pgdata() { echo "$(node_dir "$1")/data"; }
log_of() { echo "$(node_dir "$1")/pg_autoctl.log"; }
monitor_url() { echo "postgres://autoctl_node@127.0.0.1:$(port 0)/pg_auto_failover?sslmode=disable"; }

die() { echo "pg-ha.sh: $*" >&2; exit 2; }

require_tools() {
    command -v pg_autoctl >/dev/null || die "pg_autoctl not found (apt-get install postgresql-15-auto-failover pg-auto-failover-cli)"
    [ -x "$PG_BIN/pg_ctl" ] || die "$PG_BIN/pg_ctl not found (install postgresql-15)"
    id "$PG_USER" >/dev/null 2>&1 || die "no $PG_USER OS user (install postgresql-15)"
}

# Runs a command as the postgres OS user, with pg_autoctl's configuration,
# state and runtime files kept under the base directory, not its home.
as_pg() {
    local env=(env "PATH=$PG_BIN:/usr/bin:/bin" "XDG_CONFIG_HOME=$BASE_DIR/xdg/config"
        "XDG_DATA_HOME=$BASE_DIR/xdg/data" "XDG_RUNTIME_DIR=$BASE_DIR/xdg/run" "PG_CONFIG=$PG_BIN/pg_config")
    if [ "$(id -u)" = 0 ]; then
        runuser -u "$PG_USER" -- "${env[@]}" "$@"
    else
        "${env[@]}" "$@"
    fi
}

sql() {
    local n=$1
    shift
    "$PG_BIN/psql" -X -q -t -A -h 127.0.0.1 -p "$(port "$n")" -U postgres "$@" 2>/dev/null
}

monitor_sql() { sql 0 -d pg_auto_failover -c "$1"; }

# The keeper of node N (or the monitor, 0): the session leader `launch`
# started, whose process group holds pg_autoctl's services and Postgres.
pid_of() {
    local file pid
    file="$(node_dir "$1")/keeper.pid"
    [ -f "$file" ] || return 1
    pid=$(cat "$file")
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

running() { pid_of "$1" >/dev/null; }

prepare_dirs() {
    mkdir -p "$BASE_DIR/xdg/config" "$BASE_DIR/xdg/data" "$BASE_DIR/xdg/run" "$(node_dir "$1")"
    chmod 700 "$BASE_DIR/xdg/run"
    # Only the directories made here, never recursively: a node already
    # running renames files in its datadir (postgresql.auto.conf.tmp) while
    # the next one is prepared, and a recursive chown fails on them.
    if [ "$(id -u)" = 0 ]; then
        chown "$PG_USER:$PG_USER" "$BASE_DIR" "$BASE_DIR/xdg" "$BASE_DIR/xdg/config" \
            "$BASE_DIR/xdg/data" "$BASE_DIR/xdg/run" "$(node_dir "$1")"
    fi
    return 0
}

# Starts pg_autoctl for node N in a session of its own (so `kill` can take
# the keeper and its Postgres down together), creating the node on first use.
launch() {
    local n=$1 args
    prepare_dirs "$n"
    if [ -f "$(pgdata "$n")/PG_VERSION" ] && [ -n "$(find "$BASE_DIR/xdg/config" -name pg_autoctl.cfg -path "*$(pgdata "$n")*" 2>/dev/null)" ]; then
        args=(run --pgdata "$(pgdata "$n")")
    elif [ "$n" = 0 ]; then
        args=(create monitor --pgdata "$(pgdata 0)" --pgport "$(port 0)" --hostname 127.0.0.1
            --auth trust --no-ssl --pgctl "$PG_BIN/pg_ctl" --run)
    else
        args=(create postgres --pgdata "$(pgdata "$n")" --pgport "$(port "$n")" --hostname 127.0.0.1
            --name "node$n" --listen 127.0.0.1 --dbname test --auth trust --no-ssl --pgctl "$PG_BIN/pg_ctl"
            --monitor "$(monitor_url)" --run)
    fi
    as_pg setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' launch "$(node_dir "$n")/keeper.pid" \
        pg_autoctl "${args[@]}" >>"$(log_of "$n")" 2>&1 </dev/null &
    for _ in $(seq 1 20); do [ -s "$(node_dir "$n")/keeper.pid" ] && break; sleep 0.1; done
    sleep 0.5
    running "$n" && return 0
    echo "pg_autoctl for $(basename "$(node_dir "$n")") did not start; last lines of its log:" >&2
    tail -n 20 "$(log_of "$n")" >&2 || true
    return 1
}

wait_monitor() {
    for _ in $(seq 1 120); do
        monitor_sql "SELECT 1" | grep -q 1 && return 0
        running 0 || { tail -n 20 "$(log_of 0)" >&2; return 1; }
        sleep 0.5
    done
    echo "the monitor did not answer in 60 s" >&2
    return 1
}

# Failing over in seconds: health checks every second, a node unhealthy
# after 3 s of failed checks, and a dead primary's demotion not waited for
# beyond 6 s (defaults: 5 s, 20 s and 30 s). The 6 s must stay above the
# keepers' network_partition_timeout (tune_keeper): an isolated primary
# demotes itself before its standby is promoted.
tune_monitor() {
    monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_period = 1000" >/dev/null
    monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000" >/dev/null
    monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1" >/dev/null
    monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500" >/dev/null
    monitor_sql "ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 3000" >/dev/null
    monitor_sql "ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 6000" >/dev/null
    monitor_sql "SELECT pg_reload_conf()" >/dev/null
}

# A primary that reaches neither the monitor nor its standby for 4 s
# demotes itself (default 20 s), before the monitor's 6 s demote timeout.
PARTITION_TIMEOUT_SECS=4
tune_keeper() {
    local n=$1
    as_pg pg_autoctl config set --pgdata "$(pgdata "$n")" timeout.network_partition_timeout "$PARTITION_TIMEOUT_SECS" >/dev/null
    as_pg pg_autoctl reload --pgdata "$(pgdata "$n")" >/dev/null 2>&1 || true
}

# node N's state as the monitor sees it: "reported goal".
state_of() {
    monitor_sql "SELECT reportedstate || ' ' || goalstate FROM pgautofailover.node WHERE nodename = 'node$1'"
}

# Whether node N answers and is (not) in recovery: primary, standby or down.
role_of() {
    case "$(sql "$1" -d test -c "SELECT pg_is_in_recovery()")" in
        f) echo primary ;;
        t) echo standby ;;
        *) echo down ;;
    esac
}

primary_port() {
    for n in "${NODES[@]}"; do
        [ "$(role_of "$n")" = primary ] && { port "$n"; return 0; }
    done
    return 1
}

# Until one node is a primary whose standby replicates synchronously (the
# monitor has both at their goal: primary and secondary), or only one node is
# registered and it is the primary (a pair being created).
wait_pair() {
    local want=${1:-2}
    for _ in $(seq 1 360); do
        local states
        states=$(monitor_sql "SELECT string_agg(reportedstate || '/' || goalstate, ' ' ORDER BY nodeid) FROM pgautofailover.node")
        if [ "$want" = 1 ] && [ "$states" = "single/single" ]; then return 0; fi
        if [ "$want" = 2 ] && [[ " $states " == *" primary/primary "* ]] && [[ " $states " == *" secondary/secondary "* ]]; then
            # The standby is in synchronous_standby_names once the primary
            # says so.
            local primary
            primary=$(primary_port) || true
            if [ -n "$primary" ] && [ -n "$(sql "$((primary - PORT_BASE))" -d test -c "SELECT 1 FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')")" ]; then
                return 0
            fi
        fi
        sleep 0.5
    done
    echo "the pair did not settle in 180 s; the monitor says: $states" >&2
    for n in 0 "${NODES[@]}"; do tail -n 5 "$(log_of "$n")" >&2 || true; done
    return 1
}

start_node() {
    local n=$1
    running "$n" || launch "$n"
    wait_pair 2
    tune_keeper "$n"
}

start() {
    require_tools
    running 0 || launch 0
    wait_monitor
    tune_monitor
    running 1 || launch 1
    # The first node must be a primary before the second clones it.
    if [ ! -f "$(pgdata 2)/PG_VERSION" ]; then wait_pair 1; fi
    running 2 || launch 2
    wait_pair 2
    for n in "${NODES[@]}"; do tune_keeper "$n"; done
    status
}

stop_one() {
    local n=$1 pid
    pid=$(pid_of "$n") || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 120); do running "$n" || break; sleep 0.25; done
    if running "$n"; then kill -9 -- "-$pid" 2>/dev/null || true; fi
    # Postgres may outlive a keeper killed hard: stop it too.
    if [ -f "$(pgdata "$n")/postmaster.pid" ]; then
        as_pg "$PG_BIN/pg_ctl" -D "$(pgdata "$n")" -m fast -w stop >/dev/null 2>&1 || true
    fi
}

stop() {
    for n in "${NODES[@]}"; do stop_one "$n"; done
    stop_one 0
    # `runuser` stops itself when the keeper under it is frozen (as `su`
    # does), and the thaw signals the keeper's group, not the wrapper: one
    # left stopped cannot reap its keeper. Wake whatever is left of the
    # pair, then end the wrappers.
    pkill -CONT -f -- "$BASE_DIR/" 2>/dev/null || true
    pkill -KILL -f -- "^runuser .*$BASE_DIR/" 2>/dev/null || true
}

kill_node() {
    local n=$1 pid postmaster
    pid=$(pid_of "$n") || die "node $n is not running"
    postmaster=$(head -n1 "$(pgdata "$n")/postmaster.pid" 2>/dev/null || true)
    # The keeper, its services and Postgres share the keeper's process group;
    # the postmaster is killed by pid too, in case it left the group.
    # Postgres's own children run in sessions of their own: killed by their
    # parent's pid, so that the whole node vanishes at once, as in a crash.
    if [ -n "$postmaster" ]; then
        kill -9 "$postmaster" $(pgrep -P "$postmaster" || true) 2>/dev/null || true
    fi
    kill -9 -- "-$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do
        running "$n" || { [ -n "$postmaster" ] && kill -0 "$postmaster" 2>/dev/null; } || return 0
        sleep 0.25
    done
}

# Sends SIG to node N's keeper group and its Postgres processes.
signal_node() {
    local n=$1 sig=$2 pid postmaster
    pid=$(pid_of "$n") || die "node $n is not running"
    postmaster=$(head -n1 "$(pgdata "$n")/postmaster.pid" 2>/dev/null || true)
    kill "-$sig" -- "-$pid" 2>/dev/null || true
    if [ -n "$postmaster" ]; then
        kill "-$sig" "$postmaster" $(pgrep -P "$postmaster" || true) 2>/dev/null || true
    fi
}

status() {
    for n in "${NODES[@]}"; do
        if pid=$(pid_of "$n"); then
            echo "node$n 127.0.0.1:$(port "$n") pid $pid $(role_of "$n") monitor:$(state_of "$n")"
        else
            echo "node$n 127.0.0.1:$(port "$n") down"
        fi
    done
}

url() {
    echo "postgres://postgres@127.0.0.1:$(port 1),127.0.0.1:$(port 2)/test?target_session_attrs=read-write"
}

check_node() {
    case "${1:-}" in 1 | 2) ;; *) die "name a node: 1 or 2" ;; esac
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    url) url ;;
    primary) primary_port || die "no primary answers" ;;
    wait-failover) wait_pair 2 ;;
    kill) check_node "${2:-}"; kill_node "$2" ;;
    freeze) check_node "${2:-}"; signal_node "$2" STOP ;;
    thaw) check_node "${2:-}"; signal_node "$2" CONT ;;
    start-node) check_node "${2:-}"; require_tools; start_node "$2" ;;
    destroy) stop; rm -rf "$BASE_DIR" ;;
    *) sed -n '2,/^set -euo/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
