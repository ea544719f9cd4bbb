#!/bin/sh
# ctest's last entry, TestSkips.Report (tests/CMakeLists.txt): lists every gtest case that
# skipped in this ctest run, with its reason, from the lines tests/skip_log.cpp wrote to $1.
# Each is also given to ctest as a label, so ctest's closing "Label Time Summary" shows it in
# any CI log (ctest prints no output of a passing test). A skip is allowed only for hardware or
# privileges the machine lacks, and says so by starting its reason with "needs "; any other
# skip fails this entry, which prints why.
set -eu
dir="$1"
records="$(cat "$dir"/*.tsv 2>/dev/null | sort -u || true)"
if [ -z "$records" ]; then
  echo "no test skipped"
  exit 0
fi
# A ';' would split the label in two (ctest keeps labels as a CMake list).
printf '%s\n' "$records" | awk -F '\t' '
  { gsub(/;/, ",", $2); n++; line[n] = $1 " (" $2 ")"; if ($2 !~ /^needs /) bad[++nbad] = line[n] }
  END {
    print n " skipped:"
    for (i = 1; i <= n; i++) print "  " line[i]
    print "<CTestLabel>skipped in all: " n " gtest case" (n == 1 ? "" : "s") ", listed below</CTestLabel>"
    for (i = 1; i <= n; i++) print "<CTestLabel>skipped: " line[i] "</CTestLabel>"
    if (nbad > 0) {
      print nbad " skipped for another reason than hardware or privileges this machine lacks"
      print "(such a skip hides a test that could run: make it run, or say what it needs with"
      print "GTEST_SKIP() << \"needs ...\"):"
      for (i = 1; i <= nbad; i++) print "  " bad[i]
      exit 1
    }
  }'
