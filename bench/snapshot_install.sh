#!/usr/bin/env bash
# Install the current fpsketch build into a private copy of PostgreSQL 15
# under DIR (default /tmp/fpsketch-bench-pg), for long benchmark runs on a
# machine where someone may `make install` a different fpsketch meanwhile:
# the server loads fpsketch.so at every restart, and bench/run.py restarts
# it for every row.  Then: bench/run.py --pgbin DIR/usr/lib/postgresql/15/bin
# (PostgreSQL finds its lib and share directories relative to its binaries).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/tmp/fpsketch-bench-pg}
rm -rf "$DIR"
mkdir -p "$DIR/usr/lib/postgresql" "$DIR/usr/share/postgresql"
cp -a /usr/lib/postgresql/15 "$DIR/usr/lib/postgresql/"
cp -a /usr/share/postgresql/15 "$DIR/usr/share/postgresql/"
make -s COPT="-Wall -Werror" >/dev/null
make -s install DESTDIR="$DIR" >/dev/null
# what bench/run.py records as the build measured (results.md, meta.json)
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench' ':!scripts' ':!*.md' || echo +dirty)" \
	> "$DIR/fpsketch-build.txt"
chmod -R a+rX "$DIR"
echo "$DIR/usr/lib/postgresql/15/bin  (fpsketch $(cat "$DIR/fpsketch-build.txt"))"
