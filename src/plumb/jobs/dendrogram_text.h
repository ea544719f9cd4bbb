// A dendrogram drawn in plain text for the terminal (plumb analyze similarity, characterize):
// leaves top to bottom in the dendrogram's leaf order, merge heights along a horizontal axis.
#pragma once

#include <string>

#include "plumb/analysis/similarity.h"

namespace plumb::jobs {

// One line per leaf and one between leaves, then an axis line; `width` columns for the tree.
// An inversion (a centroid-linkage merge below one of its children) is drawn at its child's
// height so that lines never cross, and a merge is drawn at least two columns right of a merge
// it contains (so near-equal heights stay apart); the merge list keeps the true heights.
std::string dendrogram_text(const analysis::Dendrogram& dendrogram, int width = 48);

}  // namespace plumb::jobs
