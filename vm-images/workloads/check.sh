#!/bin/sh
# Native smoke test for the workload programs: tiny sizes; each run must
# exit 0 and end with exactly one "RESULT <name> ..." line.  Programs
# whose RESULT is deterministic are run twice and must print the same line
# (rates excepted).
# Usage: check.sh [BINDIR]
BIN=$(cd "${1:-bin}" && pwd) || exit 1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/wlcheck.XXXXXX") || exit 1
PIDS=""
fail=0
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# run NAME DET ARGS...: DET=1 means the RESULT line must repeat exactly
# (apart from the measured rate).
RATE='s/ requests_per_s=[0-9.]*//'
run() {
	name=$1 det=$2
	shift 2
	i=1
	while [ $i -le $((det + 1)) ]; do
		out=$TMP/$name.$i.out
		if ! timeout 120 "$BIN/$name" "$@" >"$out" 2>"$TMP/$name.err"; then
			echo "FAIL $name $*: exit status $?"; sed 's/^/    /' "$TMP/$name.err"
			fail=1; return
		fi
		last=$(tail -n 1 "$out")
		case $last in
		"RESULT $name "*) ;;
		*) echo "FAIL $name $*: last line is not 'RESULT $name ...': $last"; fail=1; return ;;
		esac
		if [ "$(grep -c '^RESULT ' "$out")" != 1 ]; then
			echo "FAIL $name $*: more than one RESULT line"; fail=1; return
		fi
		i=$((i + 1))
	done
	if [ "$det" = 1 ] && [ "$(tail -n 1 "$TMP/$name.1.out" | sed "$RATE")" != "$(echo "$last" | sed "$RATE")" ]; then
		echo "FAIL $name $*: RESULT differs between runs:"
		tail -n 1 "$TMP/$name.1.out"; echo "$last"; fail=1; return
	fi
	echo "ok   $last"
}

# Wait until FILE contains a line matching the sed expression, print match.
wait_for() {
	n=0
	while [ $n -lt 100 ]; do
		v=$(sed -n "$2" "$1" 2>/dev/null)
		[ -n "$v" ] && { echo "$v"; return 0; }
		sleep 0.1; n=$((n + 1))
	done
	return 1
}

mkdir -p "$TMP/data/sub" "$TMP/www"
head -c 100000 /dev/zero | tr '\0' 'x' >"$TMP/data/a"
echo hello >"$TMP/data/sub/b"
: >"$TMP/data/sub/empty"
echo '<html>check</html>' >"$TMP/www/index.html"

run read         1 -d "$TMP" -n 50 -s 10000
run readdir      1 -d "$TMP" -f 20 -n 50
run ipc          1 -n 1000 -s 100
run socket       1 -n 1000 -s 100
run forkwait     1 -n 20
run racy_counter 0 -t 3 -n 10000 -a 100
run racy_kernel  0 -p 3 -n 100 -d "$TMP"
run tscrand      0 -n 2
run diskread     1 -d "$TMP/data" -n 2
run http         1 -n 50 -c 5 -r "$TMP/www" -u /index.html
run http         1 -n 50 -c 5 -w 2

# httpd + httpload as separate processes; httpd stops after -n requests.
timeout 60 "$BIN/httpd" -p 0 -a 127.0.0.1 -r "$TMP/www" -n 20 -w 2 >"$TMP/httpd.out" 2>&1 &
HTTPD=$!
PIDS="$PIDS $HTTPD"
if port=$(wait_for "$TMP/httpd.out" 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p'); then
	run httpload 0 -n 20 -c 4 -p "$port" -u /index.html
	if wait "$HTTPD" && tail -n 1 "$TMP/httpd.out" | grep -q '^RESULT httpd requests=20$'; then
		echo "ok   $(tail -n 1 "$TMP/httpd.out")"
	else
		echo "FAIL httpd: did not stop cleanly after 20 requests:"; cat "$TMP/httpd.out"; fail=1
	fi
else
	echo "FAIL httpd: no 'listening' line"; cat "$TMP/httpd.out"; fail=1
fi

# netclient against a throwaway server: fixed content + echo of the request.
python3 -u - "$TMP/port" >"$TMP/server.log" 2>&1 <<'PY' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".tmp", "w").write("%d\n" % s.getsockname()[1])
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
body = b"".join(b"known content line %d\n" % i for i in range(500))
while True:
    c, _ = s.accept()
    req = b""
    while True:
        d = c.recv(4096)
        if not d:
            break
        req += d
    c.sendall(body + req)
    c.close()
PY
PIDS="$PIDS $!"
if port=$(wait_for "$TMP/port" p); then
	run netclient 1 -h 127.0.0.1 -p "$port" -n 3 -u /x
	run netclient 1 -h 127.0.0.1 -p "$port" -m 'HELLO\r\n'
else
	echo "FAIL netclient: test server did not start"; cat "$TMP/server.log"; fail=1
fi

if [ $fail = 0 ]; then echo "check: all workloads OK"; else echo "check: FAILED"; fi
exit $fail
