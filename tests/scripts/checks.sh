# Checks the shell tests of scripts/ share (sourced): a line a script must print, and the one-line
# error with exit status 2 it must give on bad input.

# expect_line OUTPUT LINE: OUTPUT holds LINE (fixed text), else the test fails naming it.
expect_line() {
  grep -qF -- "$2" <<<"$1" || { echo "FAIL: expected the line: $2" >&2; exit 1; }
}

# expect_input_error WHAT MESSAGE COMMAND...: COMMAND exits 2 with one line of error holding
# MESSAGE; WHAT names the bad input in the failure.
expect_input_error() {
  local what=$1 message=$2 err
  shift 2
  if err=$("$@" 2>&1); then
    echo "FAIL: $what was accepted" >&2; exit 1
  else
    [ $? = 2 ] || { echo "FAIL: exit status not 2" >&2; exit 1; }
  fi
  [ "$(wc -l <<<"$err")" = 1 ] && grep -qF -- "$message" <<<"$err" ||
    { echo "FAIL: $err" >&2; exit 1; }
}
