#!/usr/bin/env bash
# scripts/system-tools.sh COMMAND WHY PACKAGE...: make sure the program COMMAND is there.
# Already there: nothing. As root with apt-get: install Debian's PACKAGEs (waiting for another
# apt's dpkg lock; one `apt-get update` if the lists are stale). Otherwise (not root, no apt-get):
# one line saying what is missing, why it is wanted and the command that installs it, and exit 0,
# so an install by a user who is not root goes on with everything else (`localbench doctor`
# names the missing tool again).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: scripts/system-tools.sh COMMAND WHY PACKAGE..." >&2
  exit 2
fi
cmd=$1 why=$2
shift 2
if command -v "$cmd" >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "== localbench: installing Debian's $* ($why)" >&2
  apt=(apt-get -o DPkg::Lock::Timeout=300 -y -q)
  "${apt[@]}" install "$@" >/dev/null || { "${apt[@]}" update >/dev/null && "${apt[@]}" install "$@" >/dev/null; }
else
  echo "== localbench: $cmd is not installed ($why): as root, apt-get install $*" >&2
fi
