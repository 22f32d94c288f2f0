#!/usr/bin/env bash
# Install what building and testing fpsketch needs (Debian bookworm).
# Idempotent; uses sudo when not root.
# sourced by demo.sh and test.sh: no set -e here, callers decide

pkgs="postgresql-15 postgresql-server-dev-15 postgresql-contrib libxxhash-dev libipc-run-perl python3-psycopg2 python3-matplotlib make gcc"
missing=""
for p in $pkgs; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	echo "installing:$missing"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
# the Debian packages start a system cluster; fpsketch never uses it
export PATH="/usr/lib/postgresql/15/bin:$PATH"
