#!/usr/bin/env bash
# Check that every MVTO outcome is serializable (test/mvto/specs, test/mvto/expected):
#   test/mvto/check_serializable.sh [DIR] [check_serializable.py options]
# See test/check_suite_serializable.sh.
exec "$(dirname "$0")/../check_suite_serializable.sh" mvto "$@"
