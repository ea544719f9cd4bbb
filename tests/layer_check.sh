#!/usr/bin/env bash
# Checks plumb's layering (docs/architecture.md): a file in src/plumb/<layer>/ includes only
# headers of its own layer or of layers below it, and no file outside store/ includes the store's
# private row helpers (store/rows.h). Prints every offending include; exits 1 if there is one.
set -u
src=${1:-$(dirname "$0")/../src/plumb}
src=${src%/}
# Lowest first. A layer may include any layer to its left.
order=(core workloads run platform profile store analysis report jobs cli)
bad=0
for layer_dir in "$src"/*/; do
  layer=$(basename "$layer_dir")
  case " ${order[*]} " in
    *" $layer "*) ;;
    *)
      echo "src/plumb/$layer/: a folder that is not a layer (add it to the order in $0 and to docs/architecture.md)"
      bad=1
      ;;
  esac
done
# One pass over every include line (grep prints file:line:text). A spawn per include took ~25 s.
grep -rn --include='*.h' --include='*.cpp' -E '^#include "plumb/[a-z_]+/' "$src" |
  awk -v order="${order[*]}" -v prefix="$src/" '
    BEGIN { n = split(order, names, " "); for (i = 1; i <= n; i++) rank[names[i]] = i }
    {
      first = index($0, ":"); rest = substr($0, first + 1)
      second = index(rest, ":")
      file = substr($0, length(prefix) + 1, first - length(prefix) - 1)
      line = substr(rest, 1, second - 1)
      include = substr(rest, second + 1)
      layer = substr(file, 1, index(file, "/") - 1)
      if (!(layer in rank)) next  # reported above
      match(include, /"plumb\/[a-z_]+\//)
      target = substr(include, RSTART + 7, RLENGTH - 8)
      if ((target in rank) && rank[target] > rank[layer]) {
        print file ":" line ": " layer " includes the higher layer " target ": " include
        bad = 1
      }
      if (target == "store" && layer != "store" && index(include, "\"plumb/store/rows.h\"")) {
        print file ":" line ": store/rows.h is private to the store: " include
        bad = 1
      }
    }
    END { exit bad }' || bad=1
[ "$bad" -eq 0 ] && echo "layers hold: ${order[*]} (each includes only those before it)"
exit "$bad"
