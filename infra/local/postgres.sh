#!/bin/sh
# Makes sure the PostgreSQL server binaries the tests start are here
# (package internal/pgtest runs initdb and postgres from them into a
# temporary directory; no server is installed as a service or started).
# When they are missing and apt-get can install Debian's postgresql
# package, it does; otherwise it says how to get them and, under CI=true,
# fails.
set -eu

have() {
	for d in "$(pg_config --bindir 2>/dev/null || true)" /usr/lib/postgresql/*/bin; do
		if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/postgres" ]; then
			echo "PostgreSQL server binaries: $d"
			return 0
		fi
	done
	command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1
}

have && exit 0

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	echo "PostgreSQL server binaries missing: installing Debian's postgresql package"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
	have && exit 0
fi

msg="PostgreSQL server binaries not found (initdb, postgres): install them with 'apt-get install postgresql' (Debian/Ubuntu) or put their directory on PATH"
if [ "${CI:-}" = true ]; then
	echo "$msg (CI=true: PostgreSQL tests must run)" >&2
	exit 1
fi
echo "$msg; the PostgreSQL tests will be skipped" >&2
