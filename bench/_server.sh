# Sourced by the bench scripts: start the WSGI server under test, pinned to CPU 0.
# BENCH_SERVER=granian (default; Rust HTTP layer, what docs/deploy.md recommends) or
# gunicorn (gthread). One worker process; $2 threads run Django views.
# Usage: start_server PORT THREADS LOGFILE   (sets SERVER_PID and SERVER_DESC)
start_server() {
  local port="$1" threads="$2" log="$3"
  case "${BENCH_SERVER:-granian}" in
    granian)
      taskset -c 0 .venv/bin/granian --interface wsgi --host 127.0.0.1 --port "$port" --workers 1 \
        --blocking-threads "$threads" --no-ws --log-level warning paypilot.wsgi:application >"$log" 2>&1 &
      SERVER_DESC="granian (WSGI), 1 worker x $threads blocking threads" ;;
    gunicorn)
      taskset -c 0 .venv/bin/gunicorn paypilot.wsgi:application --bind "127.0.0.1:$port" --workers 1 \
        --worker-class gthread --threads "$threads" --log-level warning --access-logfile /dev/null >"$log" 2>&1 &
      SERVER_DESC="gunicorn gthread, 1 worker x $threads threads" ;;
    *) echo "BENCH_SERVER must be granian or gunicorn" >&2; return 2 ;;
  esac
  SERVER_PID=$!
}

# Usage: wait_for_server PORT LOGFILE — wait until /health answers; exit 1 with the log if
# the server died on the way (port taken, bad settings).
wait_for_server() {
  local port="$1" log="$2"
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break  # died: no point waiting
    sleep 0.2
  done
  echo "server did not start (port $port in use? set BENCH_PORT):" >&2
  cat "$log" >&2
  exit 1
}
