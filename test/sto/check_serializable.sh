#!/usr/bin/env bash
# Check that every STO outcome is serializable (test/sto/specs, test/sto/expected):
#   test/sto/check_serializable.sh [DIR] [check_serializable.py options]
# See test/check_suite_serializable.sh.
exec "$(dirname "$0")/../check_suite_serializable.sh" sto "$@"
