# Shared by the .ci scripts that make a program available to the tests
# (source it: `. "$(dirname "$0")/lib.sh"`).
#
# Packages are installed only where that is expected: in CI (CI=true), or
# when asked with COMPANION_INSTALL=1. Anywhere else a script only says what
# is missing and how to get it, and exits 1; the tests that need it skip,
# saying the same. Nothing here starts a service or edits a configuration.

# install_allowed: whether this run may install packages.
install_allowed() {
  [ "${CI:-}" = true ] || [ "${COMPANION_INSTALL:-}" = 1 ]
}

# missing NAME WHAT: says that WHAT is missing and that the tests needing it
# will be skipped, naming the opt-in; returns 1.
missing() {
  echo "$1: $2: the tests that need it will be skipped (COMPANION_INSTALL=1 make test installs it)" >&2
  return 1
}

# apt_install NAME PACKAGE...: installs Debian's packages, as root or with
# sudo -n, with service starts denied (policy-rc.d): a package that would
# start its own server on its standard port does not. Returns 1 when it
# cannot.
apt_install() {
  local name="$1"
  shift
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$name: $* missing, and there is no apt-get to install it" >&2
    return 1
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      echo "$name: $* missing, and installing it needs root" >&2
      return 1
    fi
  fi
  local policy=/usr/sbin/policy-rc.d made_policy=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# Temporary: no service starts while the test tools install.\nexit 101\n' |
      "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    made_policy=1
  fi
  echo "$name: installing Debian's $*"
  local status=0
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 "$@" >/dev/null; then
    # A fresh machine may have no package lists yet.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq -o Dpkg::Use-Pty=0 >/dev/null &&
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 "$@" >/dev/null || status=1
  fi
  if [ -n "$made_policy" ]; then
    "${sudo[@]}" rm -f "$policy"
  fi
  return "$status"
}

# require_node NAME WHY: fails unless node on PATH is 20 or newer (WHY says
# what needs it); sets node_version.
require_node() {
  node_version="$(node --version)"
  local major="${node_version#v}"
  major="${major%%.*}"
  if ! [ "$major" -ge 20 ] 2>/dev/null; then
    echo "$1: node $node_version is too old: $2 needs Node.js 20 or newer" >&2
    return 1
  fi
}

# npm_ci_stamped NAME DIR NOTE: runs `npm ci` in DIR unless DIR/node_modules
# was installed from the same package-lock.json (the stamp file
# node_modules/.package-lock.sha256, which the Go tests read too); one
# install at a time in DIR (the Go tests take the same lock). NOTE starts
# the line it prints. Installs only where install_allowed.
npm_ci_stamped() {
  local name="$1" dir="$2" note="$3"
  local stamp="$dir/node_modules/.package-lock.sha256"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$dir/.npm-ci.lock"
    flock 9
  fi
  local want
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [ -d "$dir/node_modules" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    echo "$name: $note; $dir/node_modules is up to date"
    return 0
  fi
  if ! install_allowed; then
    missing "$name" "$dir/node_modules is missing or was installed from another package-lock.json"
    return 1
  fi
  echo "$name: $note, npm $(npm --version); npm ci in $dir"
  (cd "$dir" && npm ci --no-audit --no-fund)
  printf '%s\n' "$want" >"$stamp"
}
