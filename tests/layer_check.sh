#!/usr/bin/env bash
# Checks plumb's layering (docs/architecture.md): a file in src/plumb/<layer>/ includes only
# headers of its own layer or of layers below it, and no file outside store/ includes the store's
# private row helpers (store/rows.h). Prints every offending include; exits 1 if there is one.
set -u
src=${1:-$(dirname "$0")/../src/plumb}
# Lowest first. A layer may include any layer to its left.
order=(core workloads run platform profile store analysis report jobs cli)
rank() {
  local i
  for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && echo "$i" && return; done
  echo -1
}
bad=0
for layer_dir in "$src"/*/; do
  layer=$(basename "$layer_dir")
  from=$(rank "$layer")
  if [ "$from" -lt 0 ]; then
    echo "src/plumb/$layer/: a folder that is not a layer (add it to the order in $0 and to docs/architecture.md)"
    bad=1
    continue
  fi
  while IFS=: read -r file line include; do
    target=$(sed -E 's|.*"plumb/([a-z_]+)/.*|\1|' <<<"$include")
    to=$(rank "$target")
    if [ "$to" -gt "$from" ]; then
      echo "${file#"$src"/}:$line: $layer includes the higher layer $target: $include"
      bad=1
    fi
    if [ "$target" = store ] && [ "$layer" != store ] && grep -q '"plumb/store/rows.h"' <<<"$include"; then
      echo "${file#"$src"/}:$line: store/rows.h is private to the store: $include"
      bad=1
    fi
  done < <(grep -rn --include='*.h' --include='*.cpp' -E '^#include "plumb/[a-z_]+/' "$layer_dir")
done
[ "$bad" -eq 0 ] && echo "layers hold: ${order[*]} (each includes only those before it)"
exit "$bad"
