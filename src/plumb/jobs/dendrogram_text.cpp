// Plain-text dendrogram (see dendrogram_text.h). Each node has a row (a leaf: its place in the
// leaf order, every other line; a merge: midway between its children) and a column (its
// height on the axis). Sibling subtrees cover disjoint row ranges and heights only grow
// towards the root, so a node's horizontal line meets nothing but its parent's vertical one.
#include "plumb/jobs/dendrogram_text.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace plumb::jobs {

std::string dendrogram_text(const analysis::Dendrogram& dendrogram, int width) {
  const int n = static_cast<int>(dendrogram.labels.size());
  const int nodes = 2 * n - 1;
  std::vector<double> height(nodes, 0.0);  // drawn height: at least each child's
  std::vector<int> row(nodes, 0), parent(nodes, -1);
  for (int pos = 0; pos < n; ++pos) row[dendrogram.leaf_order[pos]] = 2 * pos;
  for (int i = 0; i + 1 < n; ++i) {
    const auto& m = dendrogram.merges[i];
    height[n + i] = std::max({m.height, height[m.left], height[m.right]});
    row[n + i] = (row[m.left] + row[m.right]) / 2;
    parent[m.left] = parent[m.right] = n + i;
  }
  // Column of each node: its height on the axis, but at least two right of a child merge, so
  // that merges closer than a column apart still show which joins which.
  const double top = height[nodes - 1];
  std::vector<int> col(nodes, 0);
  for (int i = 0; i + 1 < n; ++i) {
    const auto& m = dendrogram.merges[i];
    int c = top > 0 ? static_cast<int>(std::lround(height[n + i] / top * (width - 1))) : 0;
    for (int child : {m.left, m.right})
      if (child >= n) c = std::max(c, col[child] + 2);
    col[n + i] = c;
  }
  width = std::max(width, col[nodes - 1] + 1);

  std::vector<std::string> grid(2 * n - 1, std::string(width, ' '));
  for (int node = 0; node < nodes; ++node) {
    if (parent[node] < 0) continue;
    const int from = node < n ? 0 : col[node] + 1;  // a merge's own column is its junction
    if (node >= n) grid[row[node]][col[node]] = '+';
    for (int c = from; c < col[parent[node]]; ++c) grid[row[node]][c] = '-';
  }
  for (int i = 0; i + 1 < n; ++i) {
    const auto& m = dendrogram.merges[i];
    const int c = col[n + i];
    for (int r = row[m.left] + 1; r < row[m.right]; ++r)
      if (grid[r][c] == ' ') grid[r][c] = '|';
    grid[row[m.left]][c] = grid[row[m.right]][c] = '+';
  }

  size_t label_width = 0;
  for (const auto& label : dendrogram.labels) label_width = std::max(label_width, label.size());
  std::string out;
  for (int r = 0; r < 2 * n - 1; ++r) {
    const std::string label = r % 2 == 0 ? dendrogram.labels[dendrogram.leaf_order[r / 2]] : "";
    std::string line = fmt::format("{:<{}} {}", label, label_width, grid[r]);
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + '\n';
  }
  const std::string right = fmt::format("{:.3f}", top);
  out += fmt::format("{:<{}} 0{:>{}}  (cosine distance, {} linkage)\n", "", label_width, right,
                     std::max(col[nodes - 1], static_cast<int>(right.size())),
                     analysis::linkage_name(dendrogram.linkage));
  return out;
}

}  // namespace plumb::jobs
