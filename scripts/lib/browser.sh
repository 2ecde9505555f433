# shellcheck shell=bash
# Headless Chromium and its WebDriver (chromedriver) for the dashboard's browser tests
# (tests/e2e/dashboard.rs), installed from Debian's packages `chromium` and
# `chromium-driver` when /usr/bin/chromium or /usr/bin/chromedriver is missing.
#
# apt-get update runs only when the install fails without it; sudo is used only when we
# are not root and sudo exists. A failed install stops with the packages to install.
#
# Sourced by scripts/test; defines functions only. Run it by hand with
#   bash -c 'source scripts/lib/browser.sh && ensure_chromium'

CHROMIUM_BIN=/usr/bin/chromium
CHROMEDRIVER_BIN=/usr/bin/chromedriver
CHROMIUM_PACKAGES=(chromium chromium-driver)

browser_fail() { # message
  echo "error: $1" >&2
  echo "  fix: apt-get install -y --no-install-recommends ${CHROMIUM_PACKAGES[*]}" >&2
  return 1
}

# Prints the command prefix that runs apt-get as root ("" when we are root, "sudo" when
# sudo exists); fails when neither.
browser_as_root() {
  if [ "$(id -u)" = 0 ]; then
    echo ""
  elif command -v sudo >/dev/null 2>&1; then
    echo "sudo"
  else
    return 1
  fi
}

ensure_chromium() {
  if [ -x "$CHROMIUM_BIN" ] && [ -x "$CHROMEDRIVER_BIN" ]; then
    echo "chromium: using $CHROMIUM_BIN and $CHROMEDRIVER_BIN" >&2
    return 0
  fi
  command -v apt-get >/dev/null 2>&1 ||
    browser_fail "$CHROMIUM_BIN or $CHROMEDRIVER_BIN is missing and apt-get is not available" || return 1
  local root
  root=$(browser_as_root) ||
    browser_fail "$CHROMIUM_BIN or $CHROMEDRIVER_BIN is missing; installing needs root or sudo" || return 1
  local install=(apt-get install -y -qq --no-install-recommends "${CHROMIUM_PACKAGES[@]}")
  echo "chromium: installing Debian's ${CHROMIUM_PACKAGES[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086 # $root is empty or "sudo"
  if ! $root "${install[@]}" >&2; then
    echo "chromium: install failed; running apt-get update and retrying" >&2
    # shellcheck disable=SC2086
    $root apt-get update -qq >&2 && $root "${install[@]}" >&2 ||
      browser_fail "installing ${CHROMIUM_PACKAGES[*]} failed" || return 1
  fi
  [ -x "$CHROMIUM_BIN" ] && [ -x "$CHROMEDRIVER_BIN" ] ||
    browser_fail "installed ${CHROMIUM_PACKAGES[*]} but $CHROMIUM_BIN or $CHROMEDRIVER_BIN is still missing"
}
