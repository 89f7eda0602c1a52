# lib.sh — helpers for the integration tests: a private temp dir, nbdkit
# started and stopped by PID, fio through the nbd engine.
set -euo pipefail

TEST_DIR=$(mktemp -d /tmp/storlab-test.XXXXXX)
NBDKIT_PIDS=()

cleanup () {
  local pid
  for pid in "${NBDKIT_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$TEST_DIR"
}
trap cleanup EXIT

fail () { echo "FAIL: $*" >&2; exit 1; }

# start_nbdkit NAME PLUGIN ARGS... : serves on $TEST_DIR/NAME.sock, sets LAST_PID
start_nbdkit () {
  local name=$1; shift
  local sock="$TEST_DIR/$name.sock"
  rm -f "$sock"
  nbdkit --foreground --exit-with-parent --threads=64 -U "$sock" "$@" \
    2>"$TEST_DIR/$name.stderr" &
  LAST_PID=$!
  NBDKIT_PIDS+=("$LAST_PID")
  local i
  for i in $(seq 100); do
    [ -S "$sock" ] && return 0
    kill -0 "$LAST_PID" 2>/dev/null || { cat "$TEST_DIR/$name.stderr" >&2; fail "nbdkit $name exited"; }
    sleep 0.05
  done
  fail "nbdkit $name: no socket after 5 s"
}

# stop_nbdkit PID : a normal exit (SIGTERM), waiting for it
stop_nbdkit () {
  kill "$1"
  wait "$1" || true
}

# run_fio NAME SOCKET OUT_JSON FIO_ARGS... : fails the test on a fio error
run_fio () {
  local name=$1 sock=$2 out=$3; shift 3
  # fio leaves verify state files in its working directory: keep them ours.
  (cd "$TEST_DIR" && fio --name="$name" --ioengine=nbd --uri="nbd+unix:///?socket=$sock" \
      --output-format=json --output="$out" "$@" >"$TEST_DIR/fio.stdout" 2>"$TEST_DIR/fio.stderr") \
    || { cat "$TEST_DIR/fio.stderr" >&2; fail "fio $name exited non-zero"; }
}

# json_get FILE EXPR : evaluates a Python expression on the parsed document d
json_get () {
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
