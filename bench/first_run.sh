#!/bin/bash
# The first `make run` of a fresh checkout, timed: bench/first_run.sh [REVISION] [DIRECTORY]
#
# A copy of REVISION (default HEAD) with no .venv, node_modules, front-end build or database, and an
# empty pip cache of its own (so llama-cpp-python is compiled, as on a new machine; the shared cache
# is left alone). Times `make run` until the server answers, then stops it, and prints the wall time
# and the CPU time (user + sys of make and everything it ran: steadier on a shared machine).
set -u
REVISION=${1:-HEAD}
DIR=${2:-$(mktemp -d /tmp/skein-first-run.XXXXXX)}
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
mkdir -p "$DIR/tree" "$DIR/pip-cache"
git -C "$ROOT" archive "$REVISION" | tar -x -C "$DIR/tree"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export PIP_CACHE_DIR="$DIR/pip-cache" PORT
cd "$DIR/tree"
TIMEFORMAT="wall %R s, user %U s, sys %S s"
started=$(date +%s.%N)
( time make run > "$DIR/make.log" 2>&1 ) 2> "$DIR/time" &
run=$!
until curl -sf -o /dev/null "http://127.0.0.1:$PORT/api/auth/csrf/"; do
  sleep 1
  kill -0 $run 2>/dev/null || { echo "make run failed: see $DIR/make.log"; exit 1; }
done
ready=$(python3 -c "print(round($(date +%s.%N) - $started, 1))")
server=$(ss -ltnpH "sport = :$PORT" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
kill -TERM "$server"
wait $run
echo "$REVISION: the server answered after $ready s; make run: $(cat "$DIR/time") (load $(cut -d' ' -f1-3 /proc/loadavg)); log: $DIR/make.log"
