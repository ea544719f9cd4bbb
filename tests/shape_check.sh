#!/usr/bin/env bash
# Checks the shape docs/architecture.md asks of plumb's source: no source file over 600 lines,
# and no function in cli/ over 60 lines (a command's callback parses options and prints; its
# work lives in a job below the CLI). A function is counted from a line that opens it at the
# first column to the closing brace at the first column, lambdas inside it included.
# Prints every offender; exits 1 if there is one.
set -u
src=${1:-$(dirname "$0")/../src/plumb}
max_file=600
max_cli_function=60
bad=0
while read -r lines file; do
  [ "$file" = total ] && continue
  if [ "$lines" -gt "$max_file" ]; then
    echo "${file#"$src"/}: $lines lines (at most $max_file: split it by concern)"
    bad=1
  fi
done < <(find "$src" -name '*.cpp' -o -name '*.h' | xargs wc -l)
for file in "$src"/cli/*.cpp; do
  awk -v name="${file#"$src"/}" -v max="$max_cli_function" '
    # A definition starts at column 0 with an identifier; its signature may take several lines
    # and ends with "{". A line ending with ";" first makes it a declaration instead.
    start == 0 && candidate == 0 && /^[A-Za-z_]/ && !/^(namespace|struct|class|enum|union|extern|using|template|typedef)/ {
      candidate = NR; head = $0
    }
    start == 0 && candidate > 0 {
      if (/;[ \t]*$/) candidate = 0
      else if (/\{[ \t]*$/) { start = candidate; candidate = 0; next }
    }
    start > 0 && /^\}/ {
      if (NR - start + 1 > max) { printf "%s:%d: %d lines: %s\n", name, start, NR - start + 1, head; bad = 1 }
      start = 0
    }
    END { exit bad }' "$file" || bad=1
done
[ "$bad" -eq 0 ] && echo "shape holds: files <= $max_file lines, cli functions <= $max_cli_function lines"
exit "$bad"
