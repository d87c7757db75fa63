# Helpers of the end-to-end tests that talk to the scripted OpenAI-compatible server (fake_llm.py):
# start and stop it, read what hone sent. Sourced after lib.sh (TMP, pass, fail) and HERE are set.
SERVER_PID=
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  SERVER_PID=
}
trap 'stop_server; rm -rf "$TMP"' EXIT
start_server() { # script.json: starts the fake server, sets URL; requests go to $TMP/requests.jsonl
  stop_server
  rm -f "$TMP/port" "$TMP/requests.jsonl"
  touch "$TMP/requests.jsonl"
  python3 "$HERE/fake_llm.py" "$1" "$TMP/requests.jsonl" "$TMP/port" --model fake-model &
  SERVER_PID=$!
  for _ in $(seq 100); do [ -s "$TMP/port" ] && break; sleep 0.05; done
  URL="http://127.0.0.1:$(cat "$TMP/port")/v1"
}
jq_py() { # python expression over j (the JSON in file $1)
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"
}
expect_eq() { # name, got, wanted
  if [ "$2" == "$3" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    echo "FAIL $1: got '$2', wanted '$3'"
  fi
}
requests() { wc -l <"$TMP/requests.jsonl" | tr -d ' '; }
request_field() { # line number (1-based), python expression over r (the logged request)
  python3 -c "import json,sys; r=json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2])-1]); print($2)" \
    "$TMP/requests.jsonl" "$1"
}

